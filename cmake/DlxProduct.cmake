# SPDX-License-Identifier: Apache-2.0
# The target `product`: every target outside tests/ and bench/, that is the programs, the SPANK
# plugin, the SDK's libraries, the man pages and the example trainer (what `cmake --install`
# copies out of the build tree) with the libraries they link. scripts/package.sh builds it when
# it has no tested build to package, instead of the tests and benchmarks it never packages.
# Included last, when every folder has declared its targets.
function(dlx_targets_outside_tests directory out)
  get_property(targets DIRECTORY ${directory} PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirectories DIRECTORY ${directory} PROPERTY SUBDIRECTORIES)
  foreach(subdirectory IN LISTS subdirectories)
    if(NOT subdirectory MATCHES "^${PROJECT_SOURCE_DIR}/(tests|bench)(/|$)")
      dlx_targets_outside_tests(${subdirectory} below)
      list(APPEND targets ${below})
    endif()
  endforeach()
  set(${out} ${targets} PARENT_SCOPE)
endfunction()

dlx_targets_outside_tests(${PROJECT_SOURCE_DIR} dlx_product_targets)
add_custom_target(product)
add_dependencies(product ${dlx_product_targets})
