// SPDX-License-Identifier: Apache-2.0
#pragma once
// The NVIDIA driver's user-space files a CUDA program in a container needs from the node. An
// image carries the CUDA runtime (libcudart, cuBLAS, PyTorch's own copies) but never the driver's
// libcuda.so.1: that must match the node's kernel module, so whatever starts the container brings
// it in from the host. Apptainer's --nv, Enroot's hook and Podman's CDI devices do it themselves;
// for the crun back end dlx does it as Apptainer does: each library of the node's driver is
// bind-mounted read-only, under its soname, into one directory of dlx's own (kDriverLibraryDir),
// which goes first on LD_LIBRARY_PATH, and nvidia-smi into kDriverProgramDir. Nothing is written
// into the image, and no ldconfig runs in it.
//
// Which files: the compute libraries of the driver (libcuda, libnvidia-ml, the PTX JIT and NVVM
// compilers, ...; kDriverLibraries), as the node's dynamic loader finds them: its cache, listed
// by `ldconfig -p`, the same source NVIDIA's container toolkit reads.
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "dlx/container/container_run.hpp"

namespace dlx::container {

inline constexpr const char* kDriverLibraryDir = "/dlx/driver/lib";
inline constexpr const char* kDriverProgramDir = "/dlx/driver/bin";

// The driver's compute libraries, by the name before the version ("libcuda.so" for
// libcuda.so.1). libcuda is mounted under "libcuda.so" as well: some programs (Triton, the
// compiler behind torch.compile) dlopen that name.
inline constexpr std::string_view kDriverLibraries[] = {
    "libcuda.so",          "libcudadebugger.so",   "libnvidia-ml.so",   "libnvidia-ptxjitcompiler.so",
    "libnvidia-nvvm.so",   "libnvidia-gpucomp.so", "libnvidia-cfg.so",  "libnvidia-allocator.so",
    "libnvidia-pkcs11.so", "libnvidia-pkcs11-openssl3.so"};

// The mounts for the driver libraries `ldconfig -p` lists in `listing` (its text): for each name
// of kDriverLibraries, its first versioned 64-bit entry (ldconfig lists in the loader's order of
// preference), from the path it names to kDriverLibraryDir/<soname>. Pure: no file is looked at.
std::vector<Mount> driver_library_mounts(std::string_view listing);

// This node's driver files: driver_library_mounts of the node's `ldconfig -p` (bounded to 10 s;
// none when it cannot run), each host path resolved to the file itself, and nvidia-smi from
// PATH into kDriverProgramDir. Empty on a node without the NVIDIA driver.
std::vector<Mount> find_driver_files();

// `env` (the container's variables) with kDriverLibraryDir first on LD_LIBRARY_PATH, the
// driver's programs on PATH, and TRITON_LIBCUDA_PATH naming the directory of libcuda.so.
void add_driver_variables(std::vector<std::pair<std::string, std::string>>& env);

}  // namespace dlx::container
