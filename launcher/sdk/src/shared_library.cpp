// SPDX-License-Identifier: Apache-2.0
// libdlx.so (dlx::sdk of the installed CMake package): no code of its own. Its contents are the
// static libraries linked into it whole (launcher/CMakeLists.txt, dlx_sdk_shared); CMake needs one
// source file to make a shared library.
