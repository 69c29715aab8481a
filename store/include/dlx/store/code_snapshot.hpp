// SPDX-License-Identifier: Apache-2.0
#pragma once
// The code snapshot: at submission (sbatch's allocator context, as the user) the trainer's source
// is copied into <experiment>/code/, so that every trial and every requeued attempt runs the code
// as it was submitted, whatever the user edits or checks out afterwards.
//
// What is copied (docs/file-format.md "code/"):
//   - in a git work tree (the submit directory's, or code.dir's): the files `git ls-files -c -o
//     --exclude-standard` lists (tracked, plus untracked ones .gitignore does not exclude; tracked
//     files deleted in the work tree are skipped), minus what the top-level .dlxignore matches
//     (gitignore syntax, matched by git itself: tracked files too);
//   - outside git (code.dir only): every file under the directory, minus .dlxignore's matches;
//   - symbolic links are copied as links when their target, resolved lexically from the link's
//     directory, stays inside the tree; other links (absolute targets, ../ out of the tree) are
//     skipped and listed in code.json: no file outside the tree is ever read;
//   - git submodules (and nested repositories) are skipped and listed: their commit is in the
//     parent's status.
// The plan (listing, sizes, cap) is made before anything is created, so an over-cap snapshot
// fails the submission with nothing on disk; the copy is staged under a temporary name, synced,
// renamed to code/, and code.json (with the git state) is written last as the completion marker.
// The git state (HEAD, status, diff: most of git's time) is read on a thread started once the
// plan is within the cap, while the files are copied; the copy itself runs on a few threads.
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <future>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dlx/common/error.hpp"

namespace dlx::store {

class CodeSnapshotError : public Error {
 public:
  using Error::Error;
};

inline constexpr const char* kCodeDirName = "code";
inline constexpr const char* kCodeInfoFileName = "code.json";  // written last: the completion marker
inline constexpr const char* kCodeDiffFileName = "code.diff";  // `git diff --binary HEAD`
inline constexpr const char* kDlxIgnoreFileName = ".dlxignore";

struct GitState {
  std::string commit;  // HEAD, empty in a repository without commits
  std::string branch;  // empty when HEAD is detached
  std::string remote;  // remote.origin.url without user:password@, empty when there is none
  std::string status;  // `git status --porcelain`
  std::string diff;    // `git diff --binary HEAD`
  bool dirty = false;  // the snapshot differs from the commit (status is not empty)
};

struct CodeEntry {
  std::string path;  // relative to the root, as git lists it
  std::uint64_t size = 0;
  bool symlink = false;
  mode_t mode = 0;   // the source's permission bits (regular files)
};

struct SkippedEntry {
  std::string path;
  std::string reason;
};

struct CodePlan {
  std::filesystem::path root;     // the directory whose files are copied (a work tree's top level)
  std::string workdir;            // where trials start, relative to root ("" for root itself)
  std::optional<GitState> git;    // nullopt outside git, and until finish_git_state()
  std::shared_future<GitState> git_pending;  // in git: the state being read (see finish_git_state)
  std::vector<CodeEntry> files;   // sorted by path
  std::vector<SkippedEntry> skipped;
  std::uint64_t bytes = 0;        // sum of the regular files' sizes
  std::uint64_t max_size = 0;
  double planning_seconds = 0;
};

struct CodeRequest {
  std::filesystem::path submit_dir;          // the job's working directory
  std::optional<std::filesystem::path> dir;  // code.dir, absolute
  std::uint64_t max_size = 0;
  std::chrono::milliseconds git_timeout{20000};  // per git command
};

// Lists and measures what the snapshot will hold, and in a git work tree starts reading its git
// state (git_pending). Only the user's own repository is read (code_repository.hpp: git never
// looks in a directory of another user's, and runs no fsmonitor, hook, external diff or textconv).
// nullopt when there is nothing to snapshot: no code.dir and the submit directory is not in a git
// work tree, or git is not installed, or the submit directory or its repository is not the
// user's; in that last case `no_snapshot_warning` (when given) says why and what to do. Throws
// CodeSnapshotError, with the biggest files named, when the total is over request.max_size; for a
// code.dir that is not a directory, is not the user's, or is in a repository of another user's;
// and for a git command that fails or runs past its timeout.
std::optional<CodePlan> plan_code_snapshot(const CodeRequest& request, std::string* no_snapshot_warning = nullptr);

// Waits for the git state plan_code_snapshot started and moves it into plan.git (nothing to do
// outside git or when done already). Throws the CodeSnapshotError of a git command that failed.
void finish_git_state(CodePlan& plan);

// What the top of the directory trials start in (root/workdir) holds that the snapshot leaves out:
// what .gitignore or .dlxignore excludes there (a dataset, a traindata.pt, a runs/), the names a
// script opens beside itself and no trial will find. sbatch names them at submission; a trial that
// crashes on one is explained (launcher/launch/snapshot_gap.hpp). Hidden names, __pycache__ and
// the plan's skipped entries (said on their own) are not listed. Sorted by name.
struct LeftOutEntry {
  std::string name;
  bool directory = false;
  std::uint64_t bytes = 0;  // a file's size (directories are not walked: a dataset may be huge)
};
std::vector<LeftOutEntry> left_out_at_start(const CodePlan& plan);

// Copies the plan into <experiment_dir>/code/ (modes: copied_file_mode, copied_directory_mode),
// then (finish_git_state) writes code.diff and code.json. code.diff holds lines of the tracked
// files: 0440 when the group could read every file of the snapshot at its source (its mode and
// every directory above it), else 0400. code.json holds names and git's state, no file contents:
// 0440. Throws CodeSnapshotError (the caller removes the experiment directory it just made).
void write_code_snapshot(CodePlan& plan, const std::filesystem::path& experiment_dir);

// Copies a finished snapshot tree (regular files and links, as they are) to `to`, which must not
// exist; for node-local copies. Returns the bytes copied. Throws SystemError naming the path.
std::uint64_t copy_code_tree(const std::filesystem::path& from, const std::filesystem::path& to);

// ---- pure parts, unit-tested ----

// The mode of a regular file's copy in code/: never more open than the source, never writable.
// The source's read and execute bits of owner and group, capped at 0550 (others never: the
// experiment directory is its owner's and group's), plus the owner's read: 0644 -> 0440,
// 0755 -> 0550, 0600 -> 0400 (a private file stays private), 0700 -> 0500.
mode_t copied_file_mode(mode_t source);

// A directory's in code/: the source's group read and execute bits, and the owner's rwx (the
// copy is made into it): 0755 -> 0750, 0700 -> 0700.
mode_t copied_directory_mode(mode_t source);

// "a\0b\0" -> {"a", "b"}.
std::vector<std::string> split_nul(std::string_view text);

// Whether a link at `link_path` (relative to the tree's root) pointing at `target` stays inside
// the tree, judged lexically: absolute targets and ../ past the root do not.
bool link_stays_inside(std::string_view link_path, std::string_view target);

// The over-cap message: the total, the cap, the biggest files and what to do.
std::string over_cap_message(const CodePlan& plan, std::size_t biggest = 5);

// A URL without its user[:password]@ part (https://user:token@host/x -> https://host/x).
std::string without_credentials(std::string_view url);

// When `git_error` (a git command's stderr) says git refused the repository because another user
// owns it ("detected dubious ownership"), what that means for `directory`: git's line, never its
// advice to trust the directory (safe.directory); nullopt for any other failure.
std::optional<std::string> unsafe_repository_message(std::string_view git_error, const std::filesystem::path& directory);

}  // namespace dlx::store
