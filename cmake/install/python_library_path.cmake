# SPDX-License-Identifier: Apache-2.0
# Install step (launcher/CMakeLists.txt): writes <python dir>/dlx/_installed.py, the path from the
# installed package to the installed libdlx_c (its SONAME), relative so that the tree may be
# moved as a whole. Inputs: DLX_PYTHON_DIR, DLX_LIB_DIR (absolute or under the prefix),
# DLX_C_SONAME.
include(${CMAKE_CURRENT_LIST_DIR}/install_path.cmake)
dlx_install_path(python_dir "${DLX_PYTHON_DIR}")
dlx_install_path(lib_dir "${DLX_LIB_DIR}")
file(RELATIVE_PATH library "${python_dir}/dlx" "${lib_dir}/${DLX_C_SONAME}")
set(file "$ENV{DESTDIR}${python_dir}/dlx/_installed.py")
message(STATUS "Installing: ${file}")
file(WRITE "${file}" "# Written by cmake --install: libdlx_c, relative to this package's directory.\n"
                "LIBRARY = \"${library}\"\n")
