// SPDX-License-Identifier: Apache-2.0
#include "owner_rights.hpp"

#include <grp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include <fmt/format.h>

#include "dlx/common/accounts.hpp"
#include "dlx/common/error.hpp"
#include "dlx/common/trusted_path.hpp"

namespace dlx::cli {

namespace {

void become(uid_t uid, gid_t fallback_gid) {
  const auto known = passwd_entry(uid);
  const gid_t gid = known ? known->gid : fallback_gid;
  // Groups first, then gid, then uid: after setuid there is no right left to change them.
  if (known ? ::initgroups(known->name.c_str(), gid) != 0 : ::setgroups(0, nullptr) != 0) {
    throw SystemError(fmt::format("cannot take on the groups of {}", user_name_of(uid)), errno);
  }
  if (::setgid(gid) != 0) throw SystemError(fmt::format("cannot take on group id {}", gid), errno);
  if (::setuid(uid) != 0) throw SystemError(fmt::format("cannot take on the user {}", user_name_of(uid)), errno);
  if (::setuid(0) == 0 || ::geteuid() != uid) {
    throw Error(fmt::format("could not give up root to act as {}: refusing to go on", user_name_of(uid)));
  }
}

}  // namespace

std::string act_as_experiment_owner(const std::filesystem::path& experiment_dir) {
  const auto absolute = std::filesystem::absolute(experiment_dir).lexically_normal();
  struct stat status {};
  if (::stat(absolute.c_str(), &status) != 0) {
    throw SystemError(fmt::format("cannot look at {}", absolute.string()), errno);
  }
  const bool root = ::geteuid() == 0;
  if (!root && status.st_uid != ::geteuid()) {
    throw Error(fmt::format("{} belongs to {}: only its owner (or root, who then acts as the owner) may "
                            "delete in it",
                            absolute.string(), user_name_of(status.st_uid)));
  }
  const uid_t owner = root ? status.st_uid : ::geteuid();
  open_trusted_directory(absolute, owner);  // refuses links, others' directories, shared modes
  if (root && owner != 0) become(owner, status.st_gid);
  return user_name_of(owner);
}

void act_as_user(uid_t uid) {
  if (::geteuid() != 0 || uid == 0) return;
  become(uid, 65534);  // without a passwd entry: no groups, and nogroup as the primary one
}

}  // namespace dlx::cli
