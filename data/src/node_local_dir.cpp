// SPDX-License-Identifier: Apache-2.0
// The user's node-local directory (node_local_dir.hpp has the rule and why).
#include "dlx/data/node_local_dir.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "dlx/common/error.hpp"
#include "dlx/common/file_kind.hpp"
#include "dlx/common/trusted_path.hpp"
#include "dlx/data/stage.hpp"
#include "tree_walk.hpp"

namespace dlx::data {

namespace fs = std::filesystem;

namespace {

// Where the base comes from, and so what the user can do about a bad one.
std::string choose_another(NodeLocalUse use) {
  if (use == NodeLocalUse::data_cache) {
    return "choose another node-local directory with the experiment's `data: to:` (or `dlx data --dir`), or ask "
           "your administrator";
  }
  return "the code copy goes where the site's local_dir=, else Slurm's TmpFS, else $TMPDIR, else /tmp says (ask "
         "your administrator)";
}

const char* purpose(NodeLocalUse use) {
  return use == NodeLocalUse::data_cache ? "the data cache" : "the node-local code copy";
}

[[noreturn]] void refuse_private(const fs::path& shown, NodeLocalUse use, const std::string& problem) {
  throw DataError(fmt::format("refusing the node-local directory {}: {} (dlx keeps {} only in a private "
                              "directory of your own: remove it, or have your administrator remove it if another "
                              "user made it; {})",
                              shown.string(), problem, purpose(use), choose_another(use)));
}

// The base by the storage root's rule, open (O_PATH); nullopt when it does not exist and `missing_ok`.
std::optional<UniqueFd> open_base(const fs::path& base, NodeLocalUse use, bool missing_ok) {
  try {
    return open_trusted_ancestor(base, ::geteuid());
  } catch (const UntrustedPathError& e) {
    throw DataError(fmt::format("refusing the node-local directory {} for {}: {}; whoever can change it could swap "
                                "what dlx writes there for their own files (use a directory that only you and "
                                "root can change, such as /tmp, or a local_dir= made per user by the site; {})",
                                base.string(), purpose(use), e.what(), choose_another(use)));
  } catch (const SystemError& e) {
    if (e.error_number() == ENOENT && missing_ok) return std::nullopt;
    if (e.error_number() == ENOENT || e.error_number() == ENOTDIR) {
      throw DataError(fmt::format("the node-local directory {} for {} does not exist on this node ({}; it must be an "
                                  "existing directory on every node: {})",
                                  base.string(), purpose(use), e.what(), choose_another(use)));
    }
    throw DataError(fmt::format("cannot use the node-local directory {} for {}: {} ({})", base.string(), purpose(use),
                                e.what(), choose_another(use)));
  }
}

}  // namespace

UniqueFd open_private_directory_at(int parent, const std::string& name, bool create, const fs::path& shown,
                                   NodeLocalUse use) {
  bool made = false;
  if (create) {
    if (::mkdirat(parent, name.c_str(), 0700) == 0) {
      made = true;
    } else if (errno != EEXIST) {
      throw DataError(fmt::format("cannot create {}: {} (the node-local directory must be writable by you: {})",
                                  shown.string(), std::strerror(errno), choose_another(use)));
    }
  }
  UniqueFd fd(::openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) {
    const int error = errno;
    if (error == ENOENT && !create) return fd;
    struct stat status {};
    if ((error == ELOOP || error == ENOTDIR) && ::fstatat(parent, name.c_str(), &status, AT_SYMLINK_NOFOLLOW) == 0) {
      refuse_private(shown, use, fmt::format("it is {}, not a directory", describe_file_kind(status.st_mode)));
    }
    throw DataError(fmt::format("cannot open {}: {} ({})", shown.string(), std::strerror(error), choose_another(use)));
  }
  // mkdir's mode is masked by the umask; the directory is made exactly 0700.
  if (made && ::fchmod(fd.get(), 0700) != 0) {
    throw DataError(fmt::format("cannot set the mode of {}: {}", shown.string(), std::strerror(errno)));
  }
  struct stat status {};
  if (::fstat(fd.get(), &status) != 0) {
    throw DataError(fmt::format("cannot look at {}: {}", shown.string(), std::strerror(errno)));
  }
  if (status.st_uid != ::geteuid()) {
    refuse_private(shown, use, fmt::format("it is owned by {}, not by you ({})", user_name_of(status.st_uid),
                                           user_name_of(::geteuid())));
  }
  if ((status.st_mode & 077) != 0) {
    refuse_private(shown, use, fmt::format("its mode {:04o} lets other users in (it must be 0700)",
                                           status.st_mode & 07777));
  }
  return fd;
}

std::optional<NodeLocalDir> open_node_local_dir(const fs::path& base, bool create, NodeLocalUse use) {
  auto base_fd = open_base(base, use, /*missing_ok=*/!create);
  if (!base_fd) return std::nullopt;
  NodeLocalDir dir;
  dir.path = base / fmt::format("dlx-{}", ::geteuid());
  dir.fd = open_private_directory_at(base_fd->get(), dir.path.filename().string(), create, dir.path, use);
  if (!dir.fd) return std::nullopt;
  return dir;
}

void prove_same_directory(const fs::path& path, int fd) {
  struct stat named {}, held {};
  if (::stat(path.c_str(), &named) != 0 || ::fstat(fd, &held) != 0 || named.st_dev != held.st_dev ||
      named.st_ino != held.st_ino) {
    throw DataError(fmt::format("{} no longer names the directory dlx checked and filled (something on the way to "
                                "it was replaced): refusing to hand it to the trainer",
                                path.string()));
  }
}

void remove_tree_at(int parent, const std::string& name, const fs::path& shown) {
  UniqueFd top(::openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!top && errno == EACCES) {
    // A directory an archive left without permissions (0000): its own, below a checked parent.
    if (::fchmodat(parent, name.c_str(), 0700, AT_SYMLINK_NOFOLLOW) == 0) {
      top = UniqueFd(::openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    }
  }
  if (!top) {
    const int error = errno;
    if (error == ENOENT) return;
    if (error != ELOOP && error != ENOTDIR) {
      throw DataError(fmt::format("cannot remove {}: {}", shown.string(), std::strerror(error)));
    }
    // A symbolic link (or any other file) in a directory's place: the entry goes, not its target.
    if (::unlinkat(parent, name.c_str(), 0) != 0 && errno != ENOENT) {
      throw DataError(fmt::format("cannot remove {}: {}", shown.string(), std::strerror(errno)));
    }
    return;
  }
  TreeVisitor remover;
  remover.open_up = true;
  // A staged tree may hold read-only directories: each is opened up before its entries go.
  remover.enter = [](int fd, const fs::path& where) {
    if (::fchmod(fd, 0700) != 0) {
      throw DataError(fmt::format("cannot remove {}: {}", where.string(), std::strerror(errno)));
    }
  };
  remover.entry = [](int directory, const std::string& entry, const struct stat&, const fs::path& where) {
    if (::unlinkat(directory, entry.c_str(), 0) != 0 && errno != ENOENT) {
      throw DataError(fmt::format("cannot remove {}: {}", where.string(), std::strerror(errno)));
    }
  };
  remover.leave = [](int directory, const std::string& entry, const fs::path& where) {
    if (::unlinkat(directory, entry.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) {
      throw DataError(fmt::format("cannot remove {}: {}", where.string(), std::strerror(errno)));
    }
  };
  walk_tree(top.get(), shown, remover);
  if (::unlinkat(parent, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) {
    throw DataError(fmt::format("cannot remove {}: {}", shown.string(), std::strerror(errno)));
  }
}

}  // namespace dlx::data
