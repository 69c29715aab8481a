# SPDX-License-Identifier: Apache-2.0
# dlx_install_path(OUT DIR): DIR as `cmake --install` places it (run at install time, from the
# scripts beside this one): relative directories under the prefix of this install step, so that
# `cmake --install build --prefix P` is obeyed; DESTDIR is not included.
function(dlx_install_path out dir)
  if(IS_ABSOLUTE "${dir}")
    set(${out} "${dir}" PARENT_SCOPE)
  else()
    set(${out} "${CMAKE_INSTALL_PREFIX}/${dir}" PARENT_SCOPE)
  endif()
endfunction()
