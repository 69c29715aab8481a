# SPDX-License-Identifier: Apache-2.0
# Warnings for every dlx target (not for third-party code), ccache when present.
find_program(DLX_CCACHE ccache)
if(DLX_CCACHE)
  set(CMAKE_C_COMPILER_LAUNCHER ${DLX_CCACHE})
  set(CMAKE_CXX_COMPILER_LAUNCHER ${DLX_CCACHE})
  set(CMAKE_CUDA_COMPILER_LAUNCHER ${DLX_CCACHE})
endif()

# No -Wnull-dereference: with g++ 12 at -O2 it reports false positives inside libstdc++.
add_library(dlx_warnings INTERFACE)
target_compile_options(dlx_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion
     -Wnon-virtual-dtor -Wold-style-cast -Wcast-align -Wformat=2>
  $<$<AND:$<BOOL:${DLX_WERROR}>,$<COMPILE_LANGUAGE:CXX>>:-Werror>)

# Hardening: the flags of Debian's `hardening=+all` for every target (the plugin runs inside every
# slurmstepd, as root): stack protector, stack clash protection, control-flow protection,
# _FORTIFY_SOURCE=2 (glibc's checked string and I/O calls; they need optimisation, so not in a
# Debug build), format-string errors, PIE executables, and full RELRO (-z relro -z now: the GOT
# read-only after start-up). Each compiler flag is used only where the compiler accepts it (e.g.
# -fcf-protection exists on x86 only). CUDA sources get them as host compiler flags
# (-Xcompiler), never as device flags. tests/plugin/hardening_test.sh checks the plugin with
# readelf; docs/benchmarks.md, "Hardening", what it costs. Off for the fuzz build (sanitizers).
option(DLX_HARDENING "Build with the hardening flags of Debian's hardening=+all" ON)
if(DLX_HARDENING AND NOT DLX_FUZZ)
  include(CheckCXXCompilerFlag)
  set(dlx_hardening_flags "")
  foreach(flag -fstack-protector-strong -fstack-clash-protection -fcf-protection)
    string(MAKE_C_IDENTIFIER "DLX_CXX_HAS${flag}" has_flag)
    check_cxx_compiler_flag(${flag} ${has_flag})
    if(${has_flag})
      list(APPEND dlx_hardening_flags ${flag})
    endif()
  endforeach()
  list(TRANSFORM dlx_hardening_flags PREPEND "-Xcompiler=" OUTPUT_VARIABLE dlx_hardening_host_flags)
  add_compile_options(
    "$<$<COMPILE_LANGUAGE:C,CXX>:${dlx_hardening_flags};-Wformat;-Werror=format-security>"
    "$<$<COMPILE_LANGUAGE:CUDA>:${dlx_hardening_host_flags}>")
  # -U first: a toolchain that defines another level (Ubuntu's gcc: 3) must not warn about the
  # redefinition, which -Werror would turn into an error.
  add_compile_options(
    "$<$<AND:$<COMPILE_LANGUAGE:C,CXX,CUDA>,$<NOT:$<CONFIG:Debug>>>:-U_FORTIFY_SOURCE;-D_FORTIFY_SOURCE=2>")
  add_link_options(
    "$<$<LINK_LANGUAGE:C,CXX>:-Wl,-z,relro;-Wl,-z,now>"
    "$<$<LINK_LANGUAGE:CUDA>:-Xlinker=-z,relro;-Xlinker=-z,now>")
  # PIE executables: with CMAKE_POSITION_INDEPENDENT_CODE ON (CMakeLists.txt), CMake links them
  # with -pie once the linker is known to support it (policy CMP0083).
  include(CheckPIESupported)
  check_pie_supported(LANGUAGES C CXX)
endif()
