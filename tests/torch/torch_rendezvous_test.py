# SPDX-License-Identifier: Apache-2.0
"""dlx.torch's choice of torch.distributed's store (python/dlx/torch/_rendezvous.py): USE_LIBUV=0
only where this PyTorch refuses a libuv store, in a trial of several ranks, and never over the
job's own USE_LIBUV. The refusal and the store are stand-ins (this machine's PyTorch 1.13 has no
use_libuv argument); with the real one the probe changes nothing. scripts/torch2-check.sh runs the
real refusal: Debian trixie's PyTorch 2.6, built without libuv.
"""
import torch
import torch.distributed

from dlx.torch import _rendezvous

REAL_STORE = torch.distributed.TCPStore
made = []


class WithoutLibuv:
    def __init__(self, *args, **kwargs):
        made.append(kwargs)
        raise RuntimeError("use_libuv was requested but PyTorch was build without libuv support")


class WithLibuv:
    def __init__(self, *args, **kwargs):
        made.append(kwargs)


class OtherFailure:
    def __init__(self, *args, **kwargs):
        raise RuntimeError("The server socket has failed to listen on any local network address.")


def choice(store, environ):
    torch.distributed.TCPStore = store
    try:
        return _rendezvous.use_store_without_libuv(environ), environ
    finally:
        torch.distributed.TCPStore = REAL_STORE


# A build without libuv, several ranks: USE_LIBUV=0, after one probe that asked for libuv.
changed, environ = choice(WithoutLibuv, {"WORLD_SIZE": "2"})
assert changed and environ == {"WORLD_SIZE": "2", "USE_LIBUV": "0"}, environ
assert made[-1]["use_libuv"] is True and made[-1]["is_master"] is True, made
assert made[-1]["wait_for_workers"] is False, made
print("without libuv, 2 ranks: USE_LIBUV=0")

# The job's own setting stays, and nothing is probed; one rank needs no rendezvous store.
made.clear()
for environ in ({"WORLD_SIZE": "2", "USE_LIBUV": "1"}, {"WORLD_SIZE": "1"}, {}, {"WORLD_SIZE": "two"}):
    before = dict(environ)
    assert choice(WithoutLibuv, environ) == (False, before), environ
assert not made, made
print("USE_LIBUV set by the job, one rank, no WORLD_SIZE: unchanged, no probe")

# With libuv, or another failure of the probe: unchanged (the script's own rendezvous says why).
for store in (WithLibuv, OtherFailure):
    assert choice(store, {"WORLD_SIZE": "4"}) == (False, {"WORLD_SIZE": "4"}), store
print("with libuv, or another failure: unchanged")

# The real PyTorch: 1.13 (Debian bookworm's) has no libuv store to refuse, nor has a 2.x with
# libuv (the probe's store is made and closed); a 2.x without libuv
# (Debian trixie's, in scripts/torch2-check.sh) gets USE_LIBUV=0, and then a store of two ranks'
# rendezvous starts.
environ = {"WORLD_SIZE": "2"}
if _rendezvous.use_store_without_libuv(environ):
    assert environ["USE_LIBUV"] == "0", environ
    try:
        REAL_STORE("127.0.0.1", 0, is_master=True, wait_for_workers=False, use_libuv=True)
        raise AssertionError("USE_LIBUV=0 set, yet this PyTorch made a libuv store")
    except RuntimeError as error:
        assert "without libuv support" in str(error), error
    store = REAL_STORE("127.0.0.1", 0, is_master=True, wait_for_workers=False, use_libuv=False)
    del store
    print(f"PyTorch {torch.__version__} itself: built without libuv, USE_LIBUV=0")
else:
    assert "USE_LIBUV" not in environ, environ  # 1.x, or a 2.x with libuv
    print(f"PyTorch {torch.__version__} itself: unchanged")
print("torch rendezvous: ok")
