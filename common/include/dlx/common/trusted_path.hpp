// SPDX-License-Identifier: Apache-2.0
#pragma once
// Directories and files that no other user can change.
//
// dlx reads what it runs (the frozen experiment.yaml and its entrypoint) from shared storage,
// where many users own directories side by side under one storage root. A path is only as safe as
// every directory on the way to it: whoever can rename an entry of an ancestor can put their own
// directory in its place. So before dlx trusts an experiment directory it walks the path from /
// with openat(O_NOFOLLOW), one component at a time, and checks each step by this rule (the one
// OpenSSH applies to authorized_keys):
//
//   * every directory on the way is owned by root or by the user, and is not writable by group
//     or others unless it has the sticky bit (as /tmp and a mode-1777 storage root do);
//   * below such a sticky, shared directory the entry must itself be owned by root or the user
//     (the sticky bit only stops others renaming or removing entries they do not own);
//   * a symbolic link on the way is followed only where it sits in a directory that passed, so
//     nobody else can have made or changed it (at most 40 links, like the kernel);
//   * the target itself is a real directory (not a symbolic link) owned by the user and not
//     writable by group or others.
//
// A directory that passes cannot be replaced, renamed or written by anyone but root and the user,
// so names below it may then be used as paths. Files inside are opened with O_NOFOLLOW and
// O_NONBLOCK and checked with fstat (regular file, owner, mode): a FIFO never blocks the caller,
// which may be slurmstepd.
#include <sys/types.h>

#include <cstddef>
#include <filesystem>
#include <string>

#include "dlx/common/accounts.hpp"  // user_name_of, how its refusals name owners
#include "dlx/common/error.hpp"
#include "dlx/common/unique_fd.hpp"

namespace dlx {

// A path that another user could change. what() names the path, who could change it and the fix.
class UntrustedPathError : public Error {
 public:
  using Error::Error;
};

// Checks the absolute path `directory` by the rule above for the user `owner` and returns it
// open (O_RDONLY | O_DIRECTORY). Throws UntrustedPathError, or SystemError when a component
// cannot be looked at (ENOENT, EACCES).
UniqueFd open_trusted_directory(const std::filesystem::path& directory, uid_t owner);

// Like open_trusted_directory, but the target only has to be a trusted ancestor (owned by root or
// `owner`, shared only with the sticky bit): the storage root, under which users' directories
// live. Returns it open with O_PATH.
UniqueFd open_trusted_ancestor(const std::filesystem::path& directory, uid_t owner);

// The entry `name` of the trusted directory `parent` as a directory the user owns: created with
// exactly `mode` (whatever the umask) when `create` and it does not exist, then checked as a
// target (a real directory, owned by `owner`, not writable by group or others) and returned open
// (O_RDONLY | O_DIRECTORY). `shown` is its full path, for messages. `created`, when given, says
// whether this call made it.
UniqueFd open_owned_directory_at(int parent, const std::string& name, uid_t owner, bool create,
                                 mode_t mode, const std::filesystem::path& shown,
                                 bool* created = nullptr);

// The regular file `name` in `directory`, opened read-only without following a symbolic link or
// blocking on a FIFO, and checked: a regular file owned by `owner`, not writable by group or
// others. `shown` is its full path, for messages.
UniqueFd open_owned_file_at(int directory, const std::string& name, uid_t owner,
                            const std::filesystem::path& shown);

// All of an open file, refusing more than `max_bytes`. `shown` names it in messages.
std::string read_open_file(int fd, std::size_t max_bytes, const std::filesystem::path& shown);

}  // namespace dlx
