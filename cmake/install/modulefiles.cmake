# SPDX-License-Identifier: Apache-2.0
# Install step (cmake/DlxManAndModules.cmake): <datadir>/dlx/modulefiles/dlx/<version>.lua
# (Lmod) and <version> (Environment Modules; Lmod prefers the .lua, Environment Modules ignores
# it: no #%Module line) from site-config/dlx-module.{lua,tcl}.in, with the directories of this
# install step. PYTHONPATH is set only for dlx's own Python directory: a directory on Python's
# own path (dist-packages) needs nothing, and putting it first would shadow a virtual
# environment's packages. Inputs: DLX_BIN_DIR, DLX_MAN_DIR, DLX_LIB_DIR, DLX_PYTHON_DIR,
# DLX_DATA_DIR (absolute or under the prefix), DLX_TEMPLATE_DIR, DLX_VERSION.
include(${CMAKE_CURRENT_LIST_DIR}/install_path.cmake)
set(DLX_PREFIX "${CMAKE_INSTALL_PREFIX}")
dlx_install_path(DLX_BIN "${DLX_BIN_DIR}")
dlx_install_path(DLX_MAN "${DLX_MAN_DIR}")
dlx_install_path(DLX_LIB "${DLX_LIB_DIR}")
dlx_install_path(python "${DLX_PYTHON_DIR}")
dlx_install_path(data "${DLX_DATA_DIR}")
set(DLX_LUA_PYTHONPATH "")
set(DLX_TCL_PYTHONPATH "")
if(DLX_PYTHON_DIR STREQUAL "lib/dlx/python")
  set(DLX_LUA_PYTHONPATH "prepend_path(\"PYTHONPATH\", \"${python}\")")
  set(DLX_TCL_PYTHONPATH "prepend-path PYTHONPATH \"${python}\"")
endif()
set(directory "$ENV{DESTDIR}${data}/dlx/modulefiles/dlx")
foreach(kind lua tcl)
  set(file "${directory}/${DLX_VERSION}")
  if(kind STREQUAL "lua")
    string(APPEND file ".lua")
  endif()
  message(STATUS "Installing: ${file}")
  configure_file("${DLX_TEMPLATE_DIR}/dlx-module.${kind}.in" "${file}" @ONLY)
endforeach()
