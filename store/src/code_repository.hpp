// SPDX-License-Identifier: Apache-2.0
#pragma once
// Which git repository the code snapshot may read: only the user's own (docs/security.md, "The
// code snapshot and git").
//
// git looks for a repository from the submit directory upwards, and a repository's configuration
// runs commands (core.fsmonitor, filters, diff drivers) as whoever runs git there. A directory
// above the user's, shared with others (a 1777 or group directory), may hold another user's
// `git init`: git then refuses it ("dubious ownership") and tells the user to trust it with
// safe.directory, after which that user's core.fsmonitor runs inside sbatch as the submitter and
// their files enter the snapshot. So dlx decides where git may look before git looks:
//   - discovery climbs only through directories the user owns: GIT_CEILING_DIRECTORIES is set to
//     the first directory above the start that is not theirs, so git never reads a `.git` there
//     or above (and none of another user's configuration);
//   - a `.git` met on the way that is not the user's ends the search: that is another user's
//     repository, reported without asking git; so is one above the ceiling, which git would have
//     found (without code.dir the user is told why there is no snapshot; a code.dir of the
//     user's below it is copied as a plain directory, since git reads nothing of the other's);
//   - what git then names (the top level, the git directory, the common directory and its
//     config) must be the user's too, which also covers GIT_DIR and a `.git` file pointing
//     elsewhere.
// Only lstat is used to look: nothing is read from a directory that is not the user's.
#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>

namespace dlx::store {

// A repository part (a `.git`, a top level, a directory on the way) that is not the user's.
struct ForeignPart {
  std::filesystem::path path;
  uid_t owner = 0;
  bool is_start = false;        // the start directory itself is not the user's
  bool above_ceiling = false;   // a `.git` above the user's own directories, which git never reads
};

struct GitSearch {
  bool run_git = true;                       // false: the start directory is not the user's
  std::string ceiling;                       // GIT_CEILING_DIRECTORIES ("" when git may climb to /)
  std::optional<ForeignPart> foreign;        // another user's repository (or directory) met first
};

// Where git may look for `start`'s repository on behalf of `user`. `start` must exist.
GitSearch plan_git_search(const std::filesystem::path& start, uid_t user);

// The first of the paths git named (top level, git directory, common directory, and the common
// directory's config file when it exists) that is not `user`'s; nullopt when all are.
std::optional<ForeignPart> foreign_git_part(const std::filesystem::path& top, const std::filesystem::path& git_dir,
                                            const std::filesystem::path& common_dir, uid_t user);

// What a foreign part means for the snapshot of `start`, without the fix (the caller adds it:
// with code.dir the submission fails, without it there is no snapshot).
std::string foreign_repository_reason(const std::filesystem::path& start, const ForeignPart& part);

}  // namespace dlx::store
