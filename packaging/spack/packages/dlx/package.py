# SPDX-License-Identifier: Apache-2.0
# Spack recipe for dlx (docs/admin-guide.md, "Spack"). What it builds is what `cmake --install`
# of the source tree builds: the programs, the SPANK plugin, libdlx and libdlx_c with their CMake
# package and pkg-config files, the Python package. The tests, benchmarks and examples are left out.
#
# Every dependency the CMake build looks for has its line here: tests/spack/recipe_test.py reads
# the project's CMake files and fails when one is missing.
from spack.package import *


class Dlx(CMakePackage):
    """Deep-learning experiments on a stock Slurm cluster: the --dl-experiment SPANK plugin,
    the dlx-launch launcher, HDF5 checkpoints and hyperparameter searchers."""

    # Built from a checkout of the source tree, which holds this recipe:
    #   spack develop --path <checkout> dlx@0.1.0   (docs/admin-guide.md, "Spack")
    version("0.1.0")  # project(dlx VERSION ...) in CMakeLists.txt
    license("Apache-2.0")  # LICENSE

    variant("cuda", default=False, description="Build the NCCL backend for GPU training (CUDA 12 or later)")
    variant("python", default=True,
            description="Install the Python package dlx into Python's site-packages, not dlx's own lib/dlx/python")
    # `dlx report` embeds Chart.js 3 at build time (tools/dlx/report). Spack has no package of it:
    # name a chart.min.js that exists on the build host (Debian and Ubuntu: libjs-chart.js).
    variant("chart_js", default="/usr/share/javascript/chart.js/chart.min.js", values=lambda value: True,
            description="Path of the chart.min.js (Chart.js 3) that `dlx report` embeds")

    depends_on("c", type="build")
    depends_on("cxx", type="build")
    depends_on("cmake@3.25:", type="build")
    depends_on("pkgconfig", type="build")  # finds libisal and Slurm's plugin directory

    # A SPANK plugin is built for one Slurm release and refused by any other (docs/admin-guide.md,
    # section 11, "What a Slurm release mismatch does"): use the cluster's own Slurm as an external (`spack external find slurm`).
    depends_on("slurm")
    depends_on("mpi")
    # The C API only. Serial: dlx's processes open their own files, and a parallel HDF5 would
    # bring MPI-IO into every reader (the CLI, the plugin) for nothing.
    depends_on("hdf5@1.10:~mpi")
    depends_on("yaml-cpp@0.7:")
    depends_on("boost@1.74:+program_options")
    depends_on("fmt@9")  # the fmt 9 API (Debian bookworm's 9.1 is what dlx is tested with)
    depends_on("nlohmann-json@3.10:")
    depends_on("isa-l")  # hardware CRC-32C of checkpoint tensors
    depends_on("openssl")  # data staging: SHA-256 cache keys through libcrypto's EVP
    depends_on("libarchive")  # data staging: tar archives unpacked
    depends_on("squashfs", type="run")  # data staging: unsquashfs for .squashfs images
    depends_on("protobuf@3.12:")  # `dlx export tensorboard`: protoc at build time, libprotobuf

    depends_on("cuda@12:", when="+cuda")
    depends_on("nccl", when="+cuda")

    extends("python", when="+python")
    # The package itself needs only the standard library; h5py is how users read the results
    # (docs/reading-results.md), built serially to share dlx's HDF5.
    depends_on("py-h5py~mpi", type="run", when="+python")

    def cmake_args(self):
        spec = self.spec
        args = [
            self.define("DLX_BUILD_TESTS", False),
            self.define("DLX_BUILD_BENCH", False),
            self.define("DLX_BUILD_EXAMPLES", False),
            self.define("DLX_WERROR", False),
            self.define("DLX_HARDENING", True),
            self.define("DLX_WITH_CUDA", "ON" if spec.satisfies("+cuda") else "OFF"),
            self.define("DLX_CHART_JS", spec.variants["chart_js"].value),
        ]
        if spec.satisfies("+cuda"):
            args.append(self.define("CUDAToolkit_ROOT", spec["cuda"].prefix))
        if spec.satisfies("+python"):
            # Relative to the prefix, e.g. lib/python3.11/site-packages.
            args.append(self.define("DLX_PYTHON_INSTALL_DIR", spec["python"].package.purelib))
        return args
