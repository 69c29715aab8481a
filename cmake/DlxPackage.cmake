# SPDX-License-Identifier: Apache-2.0
# The installed SDK for other projects (docs/sdk.md, "Building against an installed dlx"):
#   find_package(dlx 0.1 REQUIRED)  ->  dlx::sdk (libdlx.so, C++20) and dlx::c (libdlx_c.so)
#   pkg-config dlx / dlx-c          ->  the same libraries
# The targets are those of launcher/CMakeLists.txt (dlx_sdk_shared, dlx_c). dlx::sdk's headers
# include nlohmann-json and nothing else outside dlx, so it is the one dependency the package
# looks for; MPI, HDF5, fmt, yaml-cpp and the rest are libdlx.so's own (DT_NEEDED), not the
# consumer's. The CMake files are relocatable; the .pc files name the prefix of the install step.
include(CMakePackageConfigHelpers)
set(DLX_CMAKE_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/dlx)

install(EXPORT dlxTargets NAMESPACE dlx:: DESTINATION ${DLX_CMAKE_INSTALL_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/dlxConfig.cmake.in
  ${PROJECT_BINARY_DIR}/package/dlxConfig.cmake INSTALL_DESTINATION ${DLX_CMAKE_INSTALL_DIR})
# Before 1.0 a minor release may change the C++ API: only the same major.minor is compatible.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/package/dlxConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/package/dlxConfig.cmake
              ${PROJECT_BINARY_DIR}/package/dlxConfigVersion.cmake
        DESTINATION ${DLX_CMAKE_INSTALL_DIR})

set(dlx_pc_templates ${PROJECT_SOURCE_DIR}/cmake/dlx.pc.in ${PROJECT_SOURCE_DIR}/cmake/dlx-c.pc.in)
install(CODE "set(DLX_PC_TEMPLATES \"${dlx_pc_templates}\")
set(DLX_LIB_DIR \"${CMAKE_INSTALL_LIBDIR}\")
set(DLX_INCLUDE_DIR \"${CMAKE_INSTALL_INCLUDEDIR}\")
set(DLX_VERSION \"${PROJECT_VERSION}\")
include(\"${PROJECT_SOURCE_DIR}/cmake/install/pkg_config.cmake\")")
