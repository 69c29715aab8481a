// SPDX-License-Identifier: Apache-2.0
#pragma once
// mkdir -p with exact modes: every directory this call creates gets `mode` whatever the umask
// (0775 under umask 002 would let a group member plant files in a trial's directory); existing
// ones are left as they are.
#include <sys/types.h>

#include <filesystem>

namespace dlx {

// Throws SystemError naming the directory that could not be created.
void create_directories_with_mode(const std::filesystem::path& directory, mode_t mode = 0750);

}  // namespace dlx
