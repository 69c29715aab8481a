// SPDX-License-Identifier: Apache-2.0
#include "dlx/store/user_directories.hpp"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <optional>

#include <fmt/format.h>

#include "dlx/common/durable_file.hpp"
#include "dlx/common/error.hpp"
#include "dlx/common/file_kind.hpp"
#include "dlx/common/trusted_path.hpp"

namespace dlx::store {

namespace fs = std::filesystem;

namespace {

struct Account {
  uid_t uid;
  gid_t gid;
};

std::optional<Account> account_of(const std::string& user) {
  struct passwd entry {};
  struct passwd* found = nullptr;
  char buffer[4096];
  if (::getpwnam_r(user.c_str(), &entry, buffer, sizeof buffer, &found) != 0 || !found) return std::nullopt;
  return Account{found->pw_uid, found->pw_gid};
}

// Why the entry is not `uid`'s own directory; "" when it is.
std::string problem_of(const struct stat& status, uid_t uid) {
  if (!S_ISDIR(status.st_mode)) return describe_file_kind(status.st_mode);
  if (status.st_uid != uid) return fmt::format("owned by {}", user_name_of(status.st_uid));
  if ((status.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return fmt::format("writable by {} (mode {:04o})", (status.st_mode & S_IWOTH) ? "all users" : "its group",
                       status.st_mode & 07777);
  }
  return "";
}

}  // namespace

std::vector<UserDirectoryProblem> check_user_directories(const fs::path& storage_root) {
  std::vector<UserDirectoryProblem> problems;
  for (const auto& entry : fs::directory_iterator(storage_root)) {
    const std::string name = entry.path().filename().string();
    const auto account = account_of(name);
    if (!account) continue;
    struct stat status {};
    if (::lstat(entry.path().c_str(), &status) != 0) continue;  // removed meanwhile
    if (auto problem = problem_of(status, account->uid); !problem.empty()) {
      problems.push_back({name, entry.path(), std::move(problem)});
    }
  }
  std::sort(problems.begin(), problems.end(),
            [](const UserDirectoryProblem& a, const UserDirectoryProblem& b) { return a.user < b.user; });
  return problems;
}

bool add_user_directory(const fs::path& storage_root, const std::string& user) {
  const auto account = account_of(user);
  if (!account) throw Error(fmt::format("{}: no such user (check the name with getent passwd {})", user, user));
  const UniqueFd root = open_trusted_ancestor(storage_root, 0);
  const fs::path path = storage_root / user;
  bool made = ::mkdirat(root.get(), user.c_str(), 0700) == 0;
  if (!made && errno != EEXIST) throw SystemError(fmt::format("cannot create directory {}", path.string()), errno);
  if (!made) {
    struct stat status {};
    if (::fstatat(root.get(), user.c_str(), &status, AT_SYMLINK_NOFOLLOW) != 0) {
      throw SystemError(fmt::format("cannot look at {}", path.string()), errno);
    }
    if (const auto problem = problem_of(status, account->uid); !problem.empty()) {
      throw Error(fmt::format("{} already exists and is not {}'s own directory: it is {} (it may have been made "
                              "in {}'s place by someone else: look inside, then remove it and run this again)",
                              path.string(), user, problem, user));
    }
    return false;
  }
  // Made by root with mode 0700: nobody else could touch it before it is handed over.
  const UniqueFd directory(::openat(root.get(), user.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!directory) throw SystemError(fmt::format("cannot open {}", path.string()), errno);
  if (::fchown(directory.get(), account->uid, account->gid) != 0 || ::fchmod(directory.get(), 0750) != 0) {
    throw SystemError(fmt::format("cannot hand {} over to {}", path.string(), user), errno);
  }
  fsync_directory(storage_root);
  return true;
}

}  // namespace dlx::store
