// SPDX-License-Identifier: Apache-2.0
#include "dlx/store/create_experiment_dir.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include <fmt/format.h>

#include "dlx/common/error.hpp"
#include "dlx/common/trusted_path.hpp"
#include "dlx/store/experiment_layout.hpp"

namespace dlx::store {

namespace {

constexpr mode_t kDirectoryMode = 0750;

void fsync_or_throw(int fd, const fs::path& shown) {
  if (::fsync(fd) != 0) throw SystemError(fmt::format("cannot fsync {}", shown.string()), errno);
}

}  // namespace

fs::path create_experiment_dir(const fs::path& storage_root, const std::string& user, uid_t owner,
                               const std::string& name) {
  // config/ refuses such names with the file position; this is the last line of defence before
  // mkdirat: one entry of the user's directory, never a path, a hidden name or a parent.
  for (const auto& entry : {user, name}) {
    if (entry.empty() || entry.front() == '.' || entry.find('/') != std::string::npos ||
        entry.find('\0') != std::string::npos) {
      std::string shown;  // without the NUL or control bytes that made it unusable
      for (const char c : entry) shown += static_cast<unsigned char>(c) < 0x20 ? '?' : c;
      throw Error(fmt::format("'{}' cannot name a directory in {} (empty, hidden, a path or with a NUL byte)",
                              shown, storage_root.string()));
    }
  }
  const UniqueFd root = open_trusted_ancestor(storage_root, owner);
  const fs::path user_root = storage_root / user;
  const UniqueFd user_dir = open_owned_directory_at(root.get(), user, owner, /*create=*/true, kDirectoryMode,
                                                    user_root);
  for (int attempt = 1; attempt < 10000; ++attempt) {
    const std::string entry = attempt == 1 ? name : fmt::format("{}.{}", name, attempt);
    const fs::path candidate = user_root / entry;
    if (::mkdirat(user_dir.get(), entry.c_str(), kDirectoryMode) != 0) {
      if (errno == EEXIST) continue;
      throw SystemError(fmt::format("cannot create directory {}", candidate.string()), errno);
    }
    const UniqueFd experiment = open_owned_directory_at(user_dir.get(), entry, owner, /*create=*/false,
                                                        kDirectoryMode, candidate);
    if (::fchmod(experiment.get(), kDirectoryMode) != 0) {  // mkdir's mode is masked by the umask
      throw SystemError(fmt::format("cannot set the mode of {}", candidate.string()), errno);
    }
    open_owned_directory_at(experiment.get(), "trials", owner, /*create=*/true, kDirectoryMode,
                            candidate / "trials");
    fsync_or_throw(experiment.get(), candidate);
    fsync_or_throw(user_dir.get(), user_root);
    return candidate;
  }
  throw Error(fmt::format("{}: 10000 experiments named {} already exist", user_root.string(), name));
}

void link_job(const fs::path& experiment_dir, const std::string& job_id, uid_t owner) {
  const fs::path user_root = experiment_dir.parent_path();
  const UniqueFd user_dir = open_trusted_directory(user_root, owner);
  const fs::path link = job_link_path(user_root, job_id);
  const UniqueFd jobs = open_owned_directory_at(user_dir.get(), ".jobs", owner, /*create=*/true, kDirectoryMode,
                                                link.parent_path());
  if (::symlinkat(experiment_dir.c_str(), jobs.get(), job_id.c_str()) != 0 && errno != EEXIST) {
    throw SystemError(fmt::format("cannot create link {}", link.string()), errno);
  }
}

}  // namespace dlx::store
