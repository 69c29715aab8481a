# SPDX-License-Identifier: Apache-2.0
# The toolchain of the portable libdlx_c (scripts/portable-c.sh, docs/containers.md): this host's
# g++ compiling and linking against the headers and libraries of an older glibc's root
# (DLX_PORTABLE_SYSROOT, a debootstrap of Debian bullseye), so that every glibc symbol the library
# binds has that release's version or an older one; the C++ headers stay the compiler's own.
# Used for the libraries it links statically (HDF5, yaml-cpp, fmt, ISA-L) and for dlx itself.
if(NOT DLX_PORTABLE_SYSROOT)
  message(FATAL_ERROR "PortableToolchain.cmake: set DLX_PORTABLE_SYSROOT to the older glibc's root")
endif()
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES DLX_PORTABLE_SYSROOT)
set(dlx_multiarch x86_64-linux-gnu)
# -B: the C runtime's start files (crti.o ...) from the root; -L before the compiler's own library
# directories, which would otherwise find the host's libc.so first.
set(dlx_root_flags "--sysroot=${DLX_PORTABLE_SYSROOT} -B${DLX_PORTABLE_SYSROOT}/usr/lib/${dlx_multiarch}")
set(dlx_root_link "-L${DLX_PORTABLE_SYSROOT}/usr/lib/${dlx_multiarch} -L${DLX_PORTABLE_SYSROOT}/lib/${dlx_multiarch}")
set(CMAKE_C_FLAGS_INIT "${dlx_root_flags}")
set(CMAKE_CXX_FLAGS_INIT "${dlx_root_flags}")
set(CMAKE_EXE_LINKER_FLAGS_INIT "${dlx_root_link}")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "${dlx_root_link}")
set(CMAKE_MODULE_LINKER_FLAGS_INIT "${dlx_root_link}")
set(CMAKE_POSITION_INDEPENDENT_CODE ON)
