#include "cache_dir.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "dlx/common/file_kind.hpp"
#include "dlx/common/trusted_path.hpp"
#include "dlx/data/stage.hpp"

namespace dlx::data {

namespace fs = std::filesystem;

namespace {

// Makes `directory` 0700 when missing (whatever the umask), then checks it.
void check_private_directory(const fs::path& directory, bool create) {
  if (create && ::mkdir(directory.c_str(), 0700) != 0 && errno != EEXIST) {
    throw DataError(fmt::format("cannot create the data cache directory {}: {} (the node-local directory must be "
                                "writable by you: choose another with `data: to:` or --dir)",
                                directory.string(), std::strerror(errno)));
  }
  struct stat info {};
  if (::lstat(directory.c_str(), &info) != 0) {
    throw DataError(fmt::format("cannot look at the data cache directory {}: {}", directory.string(),
                                std::strerror(errno)));
  }
  const std::string refusal = fmt::format("refusing the data cache directory {}: ", directory.string());
  const std::string fix = " (a cache must be your own private directory: remove it, or choose another directory "
                          "with `data: to:` or --dir)";
  if (!S_ISDIR(info.st_mode)) {
    throw DataError(refusal + fmt::format("it is {}, not a directory", describe_file_kind(info.st_mode)) + fix);
  }
  if (info.st_uid != ::geteuid()) {
    throw DataError(refusal + fmt::format("it is owned by {}, not by you ({})", user_name_of(info.st_uid),
                                          user_name_of(::geteuid())) + fix);
  }
  if ((info.st_mode & 077) != 0) {
    throw DataError(refusal + fmt::format("its mode {:04o} lets other users in (it must be 0700)",
                                          info.st_mode & 07777) + fix);
  }
}

}  // namespace

fs::path open_user_cache(const fs::path& local_root, bool create) {
  struct stat info {};
  if (::stat(local_root.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) {
    throw DataError(fmt::format("the node-local directory {} for the data cache does not exist (the site's "
                                "local_dir= or the experiment's `data: to:` must name an existing directory on "
                                "every node)", local_root.string()));
  }
  const fs::path data = user_cache_dir(local_root);
  check_private_directory(data.parent_path(), create);
  check_private_directory(data, create);
  return data;
}

}  // namespace dlx::data
