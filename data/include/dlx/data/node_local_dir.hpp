// SPDX-License-Identifier: Apache-2.0
#pragma once
// The user's node-local directory, <base>/dlx-<uid>: where the data cache (stage.hpp) and
// dlx-launch's code copy (launch/code_workdir.hpp) live on a node. Both open it here, and only here.
//
// The base (the experiment's `data: to:`, the site's local_dir=, Slurm's TmpFS, $TMPDIR or /tmp)
// may be anyone's on the face of it: /tmp/%u made by another user before any prolog ran, or
// `data: to:` naming a directory another user owns. Whoever can rename entries of the base or of
// a directory above it can swap dlx-<uid> for their own directory between a check and a use, and
// then the user trains on their data or runs their code. So:
//   1. the base is checked by the storage root's rule (dlx/common/trusted_path.hpp): it and every
//      directory above it owned by root or the user, not writable by others unless sticky, an
//      entry of a sticky shared directory owned by root or the user; walked with
//      openat(O_NOFOLLOW) from /, so the check is of what is then used;
//   2. dlx-<uid> is created (0700, whatever the umask) or opened relative to that handle, without
//      following a link, and accepted only as the user's own real directory closed to others
//      (a dlx-<uid> another user made first in a 1777 base is refused: a denial of service
//      against one user on one node, which the administrator clears by removing it);
//   3. everything below is then reached relative to the returned handle (openat, mkdirat,
//      renameat, unlinkat, fchdir). A path is given out only for messages and to the trainer
//      (DLX_DATA_DIR, its working directory), and only once prove_same_directory has shown that
//      it names what the handle holds.
// Nothing here is shared between users: every user has a dlx-<uid> of their own.
#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>

#include "dlx/common/unique_fd.hpp"

namespace dlx::data {

// Who asks: the refusals name it and the fix that applies to it.
enum class NodeLocalUse { data_cache, code_copy };

struct NodeLocalDir {
  UniqueFd fd;                 // <base>/dlx-<uid>, open O_RDONLY | O_DIRECTORY, checked
  std::filesystem::path path;  // <base>/dlx-<uid> as named (messages; the trainer's paths start here)
};

// Checks `base` by the rule above and creates (when `create`) and opens <base>/dlx-<uid> for the
// effective uid. Without `create`, nullopt when the base or dlx-<uid> does not exist (nothing
// staged on this node yet). Throws DataError naming the directory, what is wrong with it and what
// to do.
std::optional<NodeLocalDir> open_node_local_dir(const std::filesystem::path& base, bool create, NodeLocalUse use);

// The directory `name` of `parent` (a checked private directory) as one of the user's own, closed
// to others: created 0700 when `create` and missing, never through a link. `shown` is its path,
// for messages. Without `create`, an empty UniqueFd when it does not exist. Throws DataError.
UniqueFd open_private_directory_at(int parent, const std::string& name, bool create,
                                   const std::filesystem::path& shown, NodeLocalUse use);

// Throws DataError unless `path` (resolved as the trainer will) is the directory `fd` holds.
void prove_same_directory(const std::filesystem::path& path, int fd);

// Removes `name` from the directory `parent`: a directory with everything below it, anything else
// (a symbolic link included) as the entry itself. Never follows a link, and opens up (chmod 0700)
// only the directories it is removing, each opened with O_NOFOLLOW below `parent`, so that an
// archive that put a link in a directory's place cannot send it elsewhere. `shown` names `name`
// in messages. Nothing to do when it does not exist. Throws DataError.
void remove_tree_at(int parent, const std::string& name, const std::filesystem::path& shown);

}  // namespace dlx::data
