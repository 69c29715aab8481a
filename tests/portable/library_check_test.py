# SPDX-License-Identifier: Apache-2.0
"""portable_library_check.py refuses a libdlx_c that cannot load in another distribution's image,
and says why: the build's own (DLX_LIBRARY), which links Open MPI, HDF5, libstdc++ and the rest
dynamically and binds glibc 2.34's symbols. Its exports pass: the version script keeps them to the
C API, which the portable library relies on too. (scripts/portable-c.sh runs the check on the
portable library, where it must pass, against the older root's own libraries.)"""
import os

from portable_library_check import problems

library = os.environ["DLX_LIBRARY"]
found, summary = problems(library, "2.28", None)
text = "\n".join(found)
print(text)
for expected in ("needs libmpi.so", "needs libstdc++.so.6", "needs libhdf5", "newer than glibc 2.28",
                 "unversioned and not weak, e.g. MPI_"):
    assert expected in text, f"expected {expected!r} among the problems:\n{text}"
assert not any(problem.startswith("exports") for problem in found), text
assert "newest glibc version bound GLIBC_2.3" in summary, summary

# The same library passes a limit it meets: the check is of versions, not of this build.
found, _ = problems(library, "2.99", None)
assert not any("newer than glibc" in problem for problem in found), found
print("library_check_test: the build's libdlx_c is refused for the reasons above; exports are dlx_* only")
