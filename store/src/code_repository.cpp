// SPDX-License-Identifier: Apache-2.0
#include "code_repository.hpp"

#include <sys/stat.h>

#include <fmt/format.h>

#include "dlx/common/trusted_path.hpp"

namespace dlx::store {

namespace fs = std::filesystem;

namespace {

std::optional<uid_t> owner_of(const fs::path& path) {
  struct stat info {};
  if (::lstat(path.c_str(), &info) != 0) return std::nullopt;
  return info.st_uid;
}

// The first `.git` at `dir` or above, whoever owns it: only to name it in a message.
std::optional<ForeignPart> git_entry_from(fs::path dir) {
  for (;;) {
    const auto git = dir / ".git";
    if (const auto owner = owner_of(git)) return ForeignPart{git, *owner};
    if (dir == dir.root_path()) return std::nullopt;
    dir = dir.parent_path();
  }
}

}  // namespace

GitSearch plan_git_search(const fs::path& start, uid_t user) {
  GitSearch search;
  std::error_code error;
  const fs::path first = fs::canonical(start, error);
  if (error) return search;  // the caller's own checks name a missing start
  fs::path dir = first;
  for (;;) {
    const auto owner = owner_of(dir);
    if (!owner) return search;
    if (*owner != user) {
      // git would look here next: it must not. A `.git` here or above is named, so that the user
      // learns why there is no snapshot; without one, the start directory not being theirs is.
      if (dir == first) {
        search.run_git = false;
        search.foreign = ForeignPart{dir, *owner, true, false};
      } else {
        search.ceiling = dir.string();
      }
      if (auto git = git_entry_from(dir); git && git->owner != user) {
        search.foreign = git;
        search.foreign->above_ceiling = !search.ceiling.empty();
      }
      return search;
    }
    const auto git = dir / ".git";
    if (const auto git_owner = owner_of(git)) {
      if (*git_owner != user) search.foreign = ForeignPart{git, *git_owner};
      return search;  // git stops at the first `.git` it finds: this one
    }
    if (dir == dir.root_path()) return search;
    dir = dir.parent_path();
  }
}

std::optional<ForeignPart> foreign_git_part(const fs::path& top, const fs::path& git_dir, const fs::path& common_dir,
                                            uid_t user) {
  for (const auto& path : {top, git_dir, common_dir, common_dir / "config"}) {
    const auto owner = owner_of(path);
    if (owner && *owner != user) return ForeignPart{path, *owner};
  }
  return std::nullopt;
}

std::string foreign_repository_reason(const fs::path& start, const ForeignPart& part) {
  if (part.is_start) {
    return fmt::format("{} belongs to {}, not to you: dlx takes code only from your own directories and git "
                       "repositories",
                       start.string(), user_name_of(part.owner));
  }
  return fmt::format("{} is inside a git repository that is not yours ({} belongs to {}): dlx reads only your "
                     "own repositories, since git would run commands from another user's configuration as you "
                     "(do not trust it with safe.directory)",
                     start.string(), part.path.string(), user_name_of(part.owner));
}

}  // namespace dlx::store
