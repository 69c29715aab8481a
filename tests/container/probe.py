#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A trial that says what it sees inside its container (tests/cluster/container_test.sh reads
the lines "probe: KEY=VALUE" from the trial log), reports one metric through dlx, and saves and
loads a checkpoint."""
import os
import sys

import dlx
import numpy


def say(key: str, value: object) -> None:
    print(f"probe: {key}={value}", flush=True)


def main() -> None:
    say("cwd", os.getcwd())
    say("code_copy_has_probe", os.path.isfile("probe.py"))
    say("uid_inside", os.getuid())
    say("dlx_package", os.path.dirname(dlx.__file__))
    say("python", sys.version.split()[0])
    data = os.environ.get("DLX_DATA_DIR", "")
    say("data_file", open(os.path.join(data, "numbers.txt")).read().strip() if data else "none")
    try:
        with open("/ro-data/written", "w") as out:
            out.write("x")
        say("bind_mount", "writable")
    except OSError as error:
        say("bind_mount", f"read-only ({error.strerror})")
    say("bind_mount_file", open("/ro-data/hello.txt").read().strip())
    say("host_path_visible", os.path.exists("/etc/dlx-test-host-only"))
    say("ld_library_path", os.environ.get("LD_LIBRARY_PATH", "unset"))
    say("home", os.environ.get("HOME", "unset"))
    with dlx.Trial() as trial:
        say("rank", trial.rank)
        trial.report_validation(1, {"loss": 0.5})
        trial.save_checkpoint(1, {"weights": numpy.arange(4, dtype=numpy.float32)})
        trial.wait_for_checkpoint()
        loaded = trial.open_checkpoint(os.path.join(os.environ["DLX_CHECKPOINT_DIR"], "step-1.h5"))
        say("checkpoint_round_trip", list(loaded.tensors["weights"]) == [0, 1, 2, 3])
        trial.finish()
    print("probe: done", flush=True)


if __name__ == "__main__":
    main()
