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
