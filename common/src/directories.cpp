// SPDX-License-Identifier: Apache-2.0
#include "dlx/common/directories.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <vector>

#include <fmt/format.h>

#include "dlx/common/error.hpp"

namespace dlx {

void create_directories_with_mode(const std::filesystem::path& directory, mode_t mode) {
  // The missing tail of the path, outermost first.
  std::vector<std::filesystem::path> missing;
  for (auto path = directory; !path.empty(); path = path.parent_path()) {
    struct stat status {};
    if (::stat(path.c_str(), &status) == 0) break;
    missing.push_back(path);
    if (path == path.parent_path()) break;
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (::mkdir(it->c_str(), mode) != 0) {
      if (errno == EEXIST) continue;  // made by another rank meanwhile
      throw SystemError(fmt::format("cannot create directory {}", it->string()), errno);
    }
    if (::chmod(it->c_str(), mode) != 0) {
      throw SystemError(fmt::format("cannot set the mode of {}", it->string()), errno);
    }
  }
}

}  // namespace dlx
