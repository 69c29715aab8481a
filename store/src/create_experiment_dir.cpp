#include "dlx/store/create_experiment_dir.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include <fmt/format.h>

#include "dlx/common/durable_file.hpp"
#include "dlx/common/error.hpp"
#include "dlx/store/experiment_layout.hpp"

namespace dlx::store {

namespace {

// mkdir that tolerates an existing directory; returns false when the name was already taken.
bool make_directory(const fs::path& path, mode_t mode) {
  if (::mkdir(path.c_str(), mode) == 0) {
    ::chmod(path.c_str(), mode);  // mkdir's mode is masked by the umask; the layout is not
    return true;
  }
  if (errno == EEXIST) return false;
  throw SystemError(fmt::format("cannot create directory {}", path.string()), errno);
}

}  // namespace

fs::path create_experiment_dir(const fs::path& user_root, const std::string& name) {
  make_directory(user_root, 0750);
  for (int attempt = 1; attempt < 10000; ++attempt) {
    fs::path candidate = user_root / (attempt == 1 ? name : fmt::format("{}.{}", name, attempt));
    if (make_directory(candidate, 0750)) {
      make_directory(candidate / "trials", 0750);
      fsync_directory(user_root);
      return candidate;
    }
  }
  throw Error(fmt::format("{}: 10000 experiments named {} already exist", user_root.string(), name));
}

void link_job(const fs::path& user_root, const std::string& job_id, const fs::path& experiment_dir) {
  make_directory(user_root / ".jobs", 0750);
  fs::path link = job_link_path(user_root, job_id);
  if (::symlink(experiment_dir.c_str(), link.c_str()) != 0 && errno != EEXIST) {
    throw SystemError(fmt::format("cannot create link {}", link.string()), errno);
  }
}

}  // namespace dlx::store
