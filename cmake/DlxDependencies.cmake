# SPDX-License-Identifier: Apache-2.0
# The dependencies the design names, all from Debian bookworm packages (scripts/install-deps.sh).
find_package(PkgConfig REQUIRED)
find_package(MPI REQUIRED COMPONENTS C)
find_package(HDF5 REQUIRED COMPONENTS C)
find_package(yaml-cpp REQUIRED)
find_package(Boost 1.74 REQUIRED COMPONENTS program_options)
find_package(fmt REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
if(DLX_BUILD_TESTS)
  find_package(Catch2 2 REQUIRED)
endif()

# Intel ISA-L: hardware CRC-32C for every dlx checksum (common/src/crc32c.cpp).
pkg_check_modules(ISAL QUIET IMPORTED_TARGET libisal)
if(NOT ISAL_FOUND)
  message(FATAL_ERROR "dlx needs Intel ISA-L (pkg-config module 'libisal', for the CRC-32C of "
                      "checkpoint tensors) and did not find it. Install the Debian package "
                      "libisal-dev (scripts/install-deps.sh does), or point PKG_CONFIG_PATH at "
                      "the directory holding libisal.pc.")
endif()
add_library(dlx_isal INTERFACE)
target_link_libraries(dlx_isal INTERFACE PkgConfig::ISAL)

# Data staging (data/): SHA-256 of manifests through libcrypto's EVP, archives unpacked by
# libarchive (tar and its compressions); threads for the parallel copy.
find_package(OpenSSL REQUIRED COMPONENTS Crypto)
pkg_check_modules(LIBARCHIVE QUIET IMPORTED_TARGET libarchive)
if(NOT LIBARCHIVE_FOUND)
  message(FATAL_ERROR "dlx needs libarchive (pkg-config module 'libarchive', to unpack staged "
                      "tar archives) and did not find it. Install the Debian package "
                      "libarchive-dev (scripts/install-deps.sh does).")
endif()
set(THREADS_PREFER_PTHREAD_FLAG ON)
find_package(Threads REQUIRED)

find_path(SLURM_INCLUDE_DIR slurm/spank.h REQUIRED)
find_library(SLURM_LIBRARY slurm REQUIRED)

# HDF5's CMake config gives variables, not a target: wrap them once.
add_library(dlx_hdf5 INTERFACE)
target_include_directories(dlx_hdf5 SYSTEM INTERFACE ${HDF5_INCLUDE_DIRS})
target_link_libraries(dlx_hdf5 INTERFACE ${HDF5_C_LIBRARIES})
target_compile_definitions(dlx_hdf5 INTERFACE ${HDF5_DEFINITIONS})
