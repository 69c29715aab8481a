# SPDX-License-Identifier: Apache-2.0
# The portable libdlx_c (DLX_PORTABLE_C=ON; built by scripts/portable-c.sh, docs/containers.md,
# "The SDK in any image"): only libdlx_c, for container images of other distributions than the
# build's. What it needs of the image is glibc 2.28 or later, libgcc_s and nothing else:
#   - glibc: compiled and linked against an older glibc's root (PortableToolchain.cmake: Debian
#     bullseye, 2.31), so every symbol binds that release's version or an older one; the few that
#     2.28 lacks or versions later (exp, log, pow, pthread_cond_clockwait) are answered inside the
#     library (launcher/sdk/portable/glibc_compat.c);
#   - libstdc++: linked statically (its two references to later glibc releases are answered inside
#     the library too);
#   - HDF5, yaml-cpp, fmt, ISA-L: static, position-independent builds found in CMAKE_PREFIX_PATH
#     (the script builds them from Debian's sources of the versions this host builds with);
#   - Open MPI and libslurm: their headers only. The references are made weak (objcopy), so the
#     library loads where neither is installed: the Python package creates its trials without a
#     communicator, and what needs libslurm (the first node of a host list) is dlx-launch's, which
#     runs outside the container. A communicator asked of this library in a process without MPI
#     is a clear error (launcher/comm/src/mpi_runtime.cpp), never a call through a null pointer;
#   - no CUDA and NCCL (the Python package does not use them through libdlx_c);
#   - header-only libraries (nlohmann-json, Boost's headers) and the MPI and Slurm headers from
#     this host, through a directory of links that holds nothing else: the host's /usr/include
#     itself must never come before the older root's headers.
set(DLX_WITH_CUDA OFF CACHE STRING "Build the CUDA/NCCL backend: AUTO, ON or OFF" FORCE)
set(DLX_HAVE_CUDA OFF)
set(HDF5_USE_STATIC_LIBRARIES ON)
find_package(PkgConfig REQUIRED)
find_package(HDF5 REQUIRED COMPONENTS C)
find_package(yaml-cpp REQUIRED)
find_package(fmt REQUIRED)
set(THREADS_PREFER_PTHREAD_FLAG ON)
find_package(Threads REQUIRED)
pkg_check_modules(ISAL REQUIRED IMPORTED_TARGET libisal)
add_library(dlx_isal INTERFACE)
target_link_libraries(dlx_isal INTERFACE PkgConfig::ISAL)
add_library(dlx_hdf5 INTERFACE)
target_include_directories(dlx_hdf5 SYSTEM INTERFACE ${HDF5_INCLUDE_DIRS})
# A static HDF5 brings its own needs: libdl (its plugin loader; a library of its own before glibc
# 2.34), threads, libm.
target_link_libraries(dlx_hdf5 INTERFACE ${HDF5_C_LIBRARIES} ${CMAKE_DL_LIBS} Threads::Threads m)
target_compile_definitions(dlx_hdf5 INTERFACE ${HDF5_DEFINITIONS})
foreach(dependency HDF5::HDF5 ${HDF5_C_LIBRARIES} yaml-cpp fmt::fmt)
  if(TARGET ${dependency})
    get_target_property(dlx_type ${dependency} TYPE)
    if(dlx_type STREQUAL "SHARED_LIBRARY")
      message(FATAL_ERROR "dlx: DLX_PORTABLE_C links ${dependency} statically, and found a shared "
                          "library: build the static ones (scripts/portable-c.sh) and put their "
                          "prefix first in CMAKE_PREFIX_PATH")
    endif()
  endif()
endforeach()

# The host's header-only libraries and MPI/Slurm headers, each through its own link.
set(dlx_host_include ${CMAKE_BINARY_DIR}/host-include)
file(MAKE_DIRECTORY ${dlx_host_include})
execute_process(COMMAND mpicc --showme:incdirs OUTPUT_VARIABLE dlx_mpi_incdirs
                OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE dlx_mpicc_status)
set(dlx_mpi_include "")
if(dlx_mpicc_status EQUAL 0)
  separate_arguments(dlx_mpi_incdirs UNIX_COMMAND "${dlx_mpi_incdirs}")
  foreach(dir ${dlx_mpi_incdirs})
    if(EXISTS ${dir}/mpi.h)
      set(dlx_mpi_include ${dir})
    endif()
  endforeach()
endif()
find_path(SLURM_INCLUDE_DIR slurm/slurm.h REQUIRED)
find_path(DLX_NLOHMANN_INCLUDE_DIR nlohmann/json.hpp REQUIRED)
find_path(DLX_BOOST_INCLUDE_DIR boost/version.hpp REQUIRED)
if(NOT dlx_mpi_include)
  message(FATAL_ERROR "dlx: DLX_PORTABLE_C needs Open MPI's headers (mpicc --showme:incdirs found "
                      "no mpi.h): install libopenmpi-dev")
endif()
foreach(link "openmpi=${dlx_mpi_include}" "slurm=${SLURM_INCLUDE_DIR}/slurm"
             "nlohmann=${DLX_NLOHMANN_INCLUDE_DIR}/nlohmann" "boost=${DLX_BOOST_INCLUDE_DIR}/boost")
  string(REPLACE "=" ";" link ${link})
  list(GET link 0 name)
  list(GET link 1 target)
  file(CREATE_LINK ${target} ${dlx_host_include}/${name} SYMBOLIC)
endforeach()
add_library(MPI::MPI_C INTERFACE IMPORTED)
target_include_directories(MPI::MPI_C SYSTEM INTERFACE ${dlx_host_include}/openmpi)
add_library(nlohmann_json::nlohmann_json INTERFACE IMPORTED)
target_include_directories(nlohmann_json::nlohmann_json SYSTEM INTERFACE ${dlx_host_include})
add_library(Boost::headers INTERFACE IMPORTED)
target_include_directories(Boost::headers SYSTEM INTERFACE ${dlx_host_include})
set(SLURM_INCLUDE_DIR ${dlx_host_include})
set(SLURM_LIBRARY "")

# dlx_portable_weaken(TARGET...): after each static library is built, its references to Open MPI
# and libslurm become weak: unresolved (null) where the process has neither, bound as usual where
# it has them. Only undefined symbols match these names (dlx defines none of them).
find_program(DLX_OBJCOPY NAMES objcopy REQUIRED)
function(dlx_portable_weaken)
  foreach(target ${ARGN})
    target_compile_definitions(${target} PRIVATE DLX_WEAK_MPI_AND_SLURM=1)
    add_custom_command(TARGET ${target} POST_BUILD
      COMMAND ${DLX_OBJCOPY} --wildcard --weaken-symbol=MPI_* --weaken-symbol=PMPI_*
              --weaken-symbol=ompi_* --weaken-symbol=slurm_* $<TARGET_FILE:${target}>
      VERBATIM)
  endforeach()
endfunction()
