# SPDX-License-Identifier: Apache-2.0
# Where `cmake --install` puts things (docs/admin-guide.md, "Installed layout"): GNUInstallDirs for
# the programs, libraries, headers and data, plus two dlx-specific places.
#
# DLX_SLURM_PLUGINDIR: dlx_spank.so. Slurm loads a plugstack plugin by the path written in
# plugstack.conf, so any directory on every node's local disk works. Empty (the default): Slurm's
# own plugin directory (the `plugindir`, else `libdir`/slurm, of pkg-config's `slurm` module when
# Slurm ships one, else `slurm-wlm` (Debian) or `slurm` beside libslurm) when it lies under the
# install prefix (a distribution's build, prefix /usr: /usr/lib/x86_64-linux-gnu/slurm-wlm on
# Debian), else <libdir>/slurm under the prefix: a default install writes nothing outside its
# prefix (and a test's `cmake --install --prefix DIR` nothing outside DIR). The directory used
# is DLX_PLUGIN_INSTALL_DIR (absolute, or relative to the prefix).
# DLX_PYTHON_INSTALL_DIR: the directory that receives the `dlx` package. The default,
# lib/dlx/python, is dlx's own: dlx-launch puts <its prefix>/lib/dlx/python on the trainer's
# PYTHONPATH (launcher/launch/src/launch_env.cpp). A distribution package chooses a directory on
# Python's own path instead (Debian: lib/python3/dist-packages), where every python3 finds it.
# Either way the installed package finds the installed libdlx_c through a file written at install
# time (python/dlx/_library.py).
# Both are STRING, not PATH: CMake would turn a relative PATH given with -D into an absolute path
# under the current directory, where a path relative to the prefix is meant.
include(GNUInstallDirs)

set(DLX_SLURM_PLUGINDIR "" CACHE STRING
    "Where dlx_spank.so is installed (absolute, or relative to the prefix); empty: automatic")
if(DLX_SLURM_PLUGINDIR)
  set(DLX_PLUGIN_INSTALL_DIR ${DLX_SLURM_PLUGINDIR})
else()
  set(dlx_slurm_plugindir "")
  pkg_check_modules(DLX_PC_SLURM QUIET slurm)
  if(DLX_PC_SLURM_FOUND)
    pkg_get_variable(dlx_slurm_plugindir slurm plugindir)
    if(NOT dlx_slurm_plugindir)
      pkg_get_variable(dlx_slurm_libdir slurm libdir)
      if(dlx_slurm_libdir)
        set(dlx_slurm_plugindir ${dlx_slurm_libdir}/slurm)
      endif()
    endif()
  endif()
  if(NOT dlx_slurm_plugindir)
    get_filename_component(dlx_slurm_libdir ${SLURM_LIBRARY} DIRECTORY)
    foreach(candidate slurm-wlm slurm)
      if(IS_DIRECTORY ${dlx_slurm_libdir}/${candidate})
        set(dlx_slurm_plugindir ${dlx_slurm_libdir}/${candidate})
        break()
      endif()
    endforeach()
  endif()
  set(DLX_PLUGIN_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/slurm)
  if(dlx_slurm_plugindir)
    file(RELATIVE_PATH dlx_relative ${CMAKE_INSTALL_PREFIX} ${dlx_slurm_plugindir})
    if(NOT dlx_relative MATCHES "^\\.\\.")
      set(DLX_PLUGIN_INSTALL_DIR ${dlx_relative})
    else()
      message(STATUS "dlx: Slurm's plugin directory ${dlx_slurm_plugindir} is outside the install "
                     "prefix: the plugin goes to <prefix>/${DLX_PLUGIN_INSTALL_DIR} "
                     "(-DDLX_SLURM_PLUGINDIR=${dlx_slurm_plugindir} puts it there)")
    endif()
  endif()
endif()

set(DLX_PYTHON_INSTALL_DIR lib/dlx/python CACHE STRING
    "Where the Python package dlx is installed (absolute, or relative to the install prefix)")
