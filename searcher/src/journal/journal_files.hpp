// SPDX-License-Identifier: Apache-2.0
#pragma once
// Opening the files of the journal protocol (journal.hpp, "Files"): never through a symbolic
// link (O_NOFOLLOW), never blocking on a FIFO (O_NONBLOCK, which changes nothing for a regular
// file), regular files only, and, for the files a writer opens, the caller's own files with
// explicit modes whatever the umask.
#include <sys/types.h>

#include <filesystem>
#include <string>

#include "dlx/common/unique_fd.hpp"

namespace dlx::searcher::detail {

// The journal for reading: an empty descriptor when it does not exist. Throws JournalError for a
// symbolic link or anything but a regular file, SystemError for other failures.
UniqueFd open_journal_to_read(const std::filesystem::path& path);

// The journal for appending, created 0640 when missing. An existing one must belong to this
// process's user; bits beyond 0640 are removed (0664 left by an older dlx under umask 002 let the
// group write it), and a stricter mode is kept.
UniqueFd open_journal_to_write(const std::filesystem::path& path);

// A lock file (journal.lock, journal.snapshot.lock), created 0600 when missing: nobody but its
// owner can open it, so nobody else can lock it. An existing one must belong to this process's
// user; bits beyond 0600 are removed.
UniqueFd open_lock_file(const std::filesystem::path& path);

// "uid 1001 (alice)", or "uid 1001" when the name cannot be looked up.
std::string describe_user(uid_t uid);

}  // namespace dlx::searcher::detail
