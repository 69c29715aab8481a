# SPDX-License-Identifier: Apache-2.0
# Install step (spank-plugin/CMakeLists.txt): writes <datadir>/dlx/plugstack.conf.d/dlx.conf from
# site-config/dlx.conf.in, with the path the plugin was installed to (without DESTDIR: the path
# Slurm will load it from). Inputs: DLX_PLUGIN_DIR, DLX_SNIPPET_DIR (absolute or under the
# prefix), DLX_PLUGIN_FILE, DLX_SNIPPET_TEMPLATE.
include(${CMAKE_CURRENT_LIST_DIR}/install_path.cmake)
dlx_install_path(plugin_dir "${DLX_PLUGIN_DIR}")
dlx_install_path(snippet_dir "${DLX_SNIPPET_DIR}")
set(DLX_PLUGIN_PATH "${plugin_dir}/${DLX_PLUGIN_FILE}")
set(DLX_SNIPPET "${snippet_dir}/dlx.conf")
message(STATUS "Installing: $ENV{DESTDIR}${DLX_SNIPPET}")
configure_file("${DLX_SNIPPET_TEMPLATE}" "$ENV{DESTDIR}${DLX_SNIPPET}" @ONLY)
