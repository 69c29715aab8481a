# SPDX-License-Identifier: Apache-2.0
# CUDA and NCCL are optional: detected under /usr/local/cuda, built when found (DLX_WITH_CUDA=AUTO),
# required with ON, skipped with OFF. Only CUDA::cudart is linked, never -lcuda: the driver stub
# would make the link succeed and the program fail to load on machines without a GPU.
set(DLX_HAVE_CUDA OFF)
if(NOT DLX_WITH_CUDA STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  find_package(CUDAToolkit QUIET)
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include)
  find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/local/cuda/lib64)
  if(CUDAToolkit_FOUND AND NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
    set(DLX_HAVE_CUDA ON)
    add_library(dlx_nccl INTERFACE)
    target_include_directories(dlx_nccl SYSTEM INTERFACE ${NCCL_INCLUDE_DIR})
    target_link_libraries(dlx_nccl INTERFACE ${NCCL_LIBRARY} CUDA::cudart)
    message(STATUS "dlx: CUDA ${CUDAToolkit_VERSION} and NCCL found: building the NCCL backend")
  elseif(DLX_WITH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "dlx: DLX_WITH_CUDA=ON but CUDA/NCCL not found "
                        "(toolkit: ${CUDAToolkit_FOUND}, nccl.h: ${NCCL_INCLUDE_DIR}, libnccl: ${NCCL_LIBRARY})")
  else()
    message(STATUS "dlx: CUDA/NCCL not found: CPU (MPI) backend only")
  endif()
endif()
