# SPDX-License-Identifier: Apache-2.0
"""A libdlx_c that cannot be loaded (a container image without its libraries, an old glibc, a
wrong DLX_LIBRARY) is a dlx.ConfigError that says why and what to do, not a bare OSError: the
trial then fails at once with that line (exit 78) instead of crash-looping. The loader's own
failures are real (a missing file; a library whose dependency is gone, built here with gcc); the
glibc case is the same function on the loader's words for it (an image with an older glibc than
this machine's is scripts/portable-c.sh's check). Run with /usr/bin/python3; PYTHONPATH=python/."""
import os
import subprocess
import sys
import tempfile

from dlx._library import load_failure

PROBE = """
import dlx
try:
    dlx.Trial()
except dlx.ConfigError as error:
    print(error)
    raise SystemExit(0)
raise SystemExit("dlx.Trial() did not raise ConfigError")
"""


def message_with(library: str) -> str:
    env = dict(os.environ, DLX_LIBRARY=library)
    done = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout.strip()


with tempfile.TemporaryDirectory() as directory:
    missing = os.path.join(directory, "libdlx_c.so.0")
    text = message_with(missing)
    assert text.startswith(f"dlx: cannot load libdlx_c ({missing}): {missing}: cannot open shared object file"), text
    assert "The file itself is missing or unreadable (DLX_LIBRARY names it): check the path" in text, text

    # A library that needs another that is not there (an image without Open MPI, say).
    dependency, library = os.path.join(directory, "libdlxgone.so"), os.path.join(directory, "libneedsgone.so")
    for source, output, extra in (("int gone(void) { return 1; }", dependency, []),
                                  ("int gone(void); int f(void) { return gone(); }", library,
                                   ["-L", directory, "-ldlxgone"])):
        subprocess.run(["gcc", "-shared", "-fPIC", "-x", "c", "-", "-o", output, *extra],
                       input=source, text=True, check=True)
    os.remove(dependency)
    text = message_with(library)
    assert "libdlxgone.so: cannot open shared object file" in text, text
    assert "A library it links is missing here" in text and "portable libdlx_c" in text, text
    assert "The file itself" not in text, text

    # Uncaught, in a trial: exit 78 after the traceback, whose last line dlx-launch records, so
    # that the trial fails at once instead of being restarted into the same error; outside a
    # trial Python's own exit 1.
    for in_trial, status in ((True, 78), (False, 1)):
        env = dict(os.environ, DLX_LIBRARY=missing)
        env.pop("DLX_EXPERIMENT_DIR", None)
        if in_trial:
            env["DLX_EXPERIMENT_DIR"] = directory
        done = subprocess.run([sys.executable, "-c", "import dlx; dlx.Trial()"], env=env, capture_output=True,
                              text=True, timeout=60)
        assert done.returncode == status, (in_trial, done.returncode, done.stderr)
        last = done.stderr.strip().splitlines()[-1]
        assert last.startswith(f"dlx.ConfigError: dlx: cannot load libdlx_c ({missing})"), done.stderr

# The loader's words for an image whose glibc is older than the library's.
text = load_failure("/dlx/lib/libdlx_c.so.0", OSError(
    "/lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.34' not found (required by /dlx/lib/libdlx_c.so.0)"))
assert "older than the one libdlx_c was built against" in text and "glibc 2.28 or later" in text, text
print("python_library_load_test: a missing library, a missing dependency and an old glibc are each "
      "a ConfigError that says why; uncaught in a trial, exit 78")
