# SPDX-License-Identifier: Apache-2.0
# Install step (cmake/DlxPackage.cmake): writes <libdir>/pkgconfig/dlx.pc and dlx-c.pc with the
# prefix of this install step (under DESTDIR; PKG_CONFIG_SYSROOT_DIR reads a staged tree).
# Inputs: DLX_PC_TEMPLATES, DLX_LIB_DIR, DLX_INCLUDE_DIR (absolute or under the prefix),
# DLX_VERSION. Directories under the prefix are written as ${prefix}/..., as pkg-config's own
# files are.
include(${CMAKE_CURRENT_LIST_DIR}/install_path.cmake)
set(DLX_PREFIX "${CMAKE_INSTALL_PREFIX}")
foreach(kind LIB INCLUDE)
  if(IS_ABSOLUTE "${DLX_${kind}_DIR}")
    set(DLX_PC_${kind}DIR "${DLX_${kind}_DIR}")
  else()
    set(DLX_PC_${kind}DIR "\${prefix}/${DLX_${kind}_DIR}")
  endif()
endforeach()
dlx_install_path(lib_dir "${DLX_LIB_DIR}")
foreach(template IN LISTS DLX_PC_TEMPLATES)
  get_filename_component(name "${template}" NAME_WLE)
  set(file "$ENV{DESTDIR}${lib_dir}/pkgconfig/${name}")
  message(STATUS "Installing: ${file}")
  configure_file("${template}" "${file}" @ONLY)
endforeach()
