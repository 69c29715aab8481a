# SPDX-License-Identifier: Apache-2.0
# Man pages for the programs, rendered from their --help at build time (cmake/help_to_man.cmake)
# into <build>/share/man/man1 and installed into <mandir>/man1; module files.
function(dlx_man_page target summary see_also)
  set(page ${PROJECT_BINARY_DIR}/share/man/man1/${target}.1)
  add_custom_command(OUTPUT ${page}
    COMMAND ${CMAKE_COMMAND} -DPROGRAM=$<TARGET_FILE:${target}> -DNAME=${target} -DSECTION=1
            "-DSUMMARY=${summary}" "-DSEE_ALSO=${see_also}" -DVERSION=${PROJECT_VERSION}
            -DOUTPUT=${page} -P ${PROJECT_SOURCE_DIR}/cmake/help_to_man.cmake
    DEPENDS ${target} ${PROJECT_SOURCE_DIR}/cmake/help_to_man.cmake
    COMMENT "Man page ${target}.1 from ${target} --help" VERBATIM)
  add_custom_target(${target}_man ALL DEPENDS ${page})
  install(FILES ${page} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
endfunction()

dlx_man_page(dlx "deep-learning experiments on Slurm: validate, plan, watch, inspect and clean up"
             "dlx-launch(1), sbatch(1); docs/ of the dlx sources")
dlx_man_page(dlx-launch "run one rank of a dlx trial (or any command) with the torchrun environment"
             "dlx(1), srun(1); docs/sdk.md of the dlx sources")

# Module files for Lmod and Environment Modules (cmake/install/modulefiles.cmake), written at
# install time with the prefix of the install step.
install(CODE "set(DLX_BIN_DIR \"${CMAKE_INSTALL_BINDIR}\")
set(DLX_MAN_DIR \"${CMAKE_INSTALL_MANDIR}\")
set(DLX_LIB_DIR \"${CMAKE_INSTALL_LIBDIR}\")
set(DLX_PYTHON_DIR \"${DLX_PYTHON_INSTALL_DIR}\")
set(DLX_DATA_DIR \"${CMAKE_INSTALL_DATADIR}\")
set(DLX_TEMPLATE_DIR \"${PROJECT_SOURCE_DIR}/site-config\")
set(DLX_VERSION \"${PROJECT_VERSION}\")
include(\"${PROJECT_SOURCE_DIR}/cmake/install/modulefiles.cmake\")")
