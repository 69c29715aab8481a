// SPDX-License-Identifier: Apache-2.0
// plan_code_snapshot: what the code snapshot will hold, decided with git's own plumbing (no
// parsing of git's files): `rev-parse` finds the work tree, looking only where code_repository.hpp
// allows (the user's own directories and repository), `ls-files` lists and filters (with
// .gitignore and .dlxignore), `status`/`diff` record how the files differ from HEAD. Every git
// command runs bounded in time (bounded_command.hpp): sbatch must not hang on a slow file system.
// The git state is read on its own thread (std::async), started once the plan is within the cap:
// in a 2,000-file repository `diff --binary HEAD` alone takes as long as the copy it overlaps.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <chrono>
#include <cstdlib>
#include <future>
#include <optional>
#include <set>
#include <string_view>

#include <fmt/format.h>

#include "code_repository.hpp"
#include "dlx/common/bounded_command.hpp"
#include "dlx/store/code_snapshot.hpp"

namespace dlx::store {

namespace fs = std::filesystem;

namespace {

// How every git command runs: bounded in time (sbatch must not hang on a slow file system), never
// prompting, paging or taking the index lock for status, discovery kept below the ceiling that
// plan_git_search chose (code_repository.hpp), and nothing from a repository's configuration that
// runs a program: no fsmonitor, no hooks (diff adds --no-ext-diff --no-textconv). Copied into the
// thread that reads the git state.
struct Git {
  std::chrono::milliseconds timeout{20000};
  std::string ceiling;

  CommandResult run(std::vector<std::string> args) const {
    const std::vector<std::string> prefix{"git", "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null"};
    args.insert(args.begin(), prefix.begin(), prefix.end());
    CommandLimits limits;
    limits.timeout = timeout;
    const std::vector<std::pair<std::string, std::string>> env{{"GIT_OPTIONAL_LOCKS", "0"},
                                                               {"GIT_TERMINAL_PROMPT", "0"},
                                                               {"GIT_PAGER", "cat"},
                                                               {"LC_ALL", "C"},
                                                               {"GIT_CEILING_DIRECTORIES", ceiling}};
    try {
      return run_bounded(args, limits, env);
    } catch (const CommandError& e) {
      throw CodeSnapshotError(fmt::format("code snapshot: {} (take no snapshot with code: {{snapshot: false}})",
                                          e.what()));
    }
  }

  // The output of a git command that must succeed.
  std::string output(const std::vector<std::string>& args) const {
    auto result = run(args);
    if (result.exit_code != 0) {
      std::string command = "git";
      for (const auto& arg : args) command += " " + arg;
      while (!result.err.empty() && result.err.back() == '\n') result.err.pop_back();
      throw CodeSnapshotError(fmt::format("code snapshot: {} failed (exit {}): {}", command, result.exit_code,
                                          result.err));
    }
    return std::move(result.out);
  }
};

std::string first_line(std::string text) {
  if (const auto end = text.find('\n'); end != std::string::npos) text.resize(end);
  return text;
}

bool is_inside(const fs::path& relative) {
  return !relative.empty() && *relative.begin() != "..";
}

bool git_installed() {
  const char* path = std::getenv("PATH");
  std::string_view dirs = path ? path : "/usr/bin:/bin";
  while (!dirs.empty()) {
    const auto end = dirs.find(':');
    const std::string dir(dirs.substr(0, end));
    if (!dir.empty() && ::access((dir + "/git").c_str(), X_OK) == 0) return true;
    if (end == std::string_view::npos) break;
    dirs.remove_prefix(end + 1);
  }
  return false;
}

// A temporary empty repository, so that git can list and filter a directory outside any work tree
// (`--git-dir=T --work-tree=DIR ls-files -o`): its ignore matching, not one written here.
class ScratchRepository {
 public:
  explicit ScratchRepository(const Git& git) {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp == '/' ? tmp : "/tmp") + "/dlx-ls.XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) {
      throw CodeSnapshotError(fmt::format("code snapshot: cannot make a scratch directory {}: {}", pattern,
                                          std::strerror(errno)));
    }
    path_ = pattern;
    git.output({"init", "-q", "--bare", path_.string()});
  }
  ~ScratchRepository() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  ScratchRepository(const ScratchRepository&) = delete;
  ScratchRepository& operator=(const ScratchRepository&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// Sorted, unique paths git lists for the tree, minus those .dlxignore matches.
std::vector<std::string> list_files(const Git& git, const fs::path& root, bool in_git) {
  const fs::path dlxignore = root / kDlxIgnoreFileName;
  std::error_code error;
  const bool has_ignore_file = fs::is_regular_file(dlxignore, error);
  const std::string exclude_from = "--exclude-from=" + dlxignore.string();
  std::vector<std::string> listed, ignored;
  if (in_git) {
    std::vector<std::string> args{"-C", root.string(), "ls-files", "-z", "-c", "-o", "--exclude-standard"};
    if (has_ignore_file) args.push_back(exclude_from);
    listed = split_nul(git.output(args));
    // Tracked files are listed whatever the ignore rules say; this finds those .dlxignore matches.
    if (has_ignore_file) {
      ignored = split_nul(git.output({"-C", root.string(), "ls-files", "-z", "-c", "-i", exclude_from}));
    }
  } else {
    ScratchRepository scratch(git);
    std::vector<std::string> args{"--git-dir=" + scratch.path().string(), "--work-tree=" + root.string(), "-C",
                                  root.string(), "ls-files", "-z", "-o"};
    if (has_ignore_file) args.push_back(exclude_from);
    listed = split_nul(git.output(args));
  }
  std::sort(listed.begin(), listed.end());
  listed.erase(std::unique(listed.begin(), listed.end()), listed.end());
  std::sort(ignored.begin(), ignored.end());
  std::vector<std::string> kept;
  std::set_difference(listed.begin(), listed.end(), ignored.begin(), ignored.end(), std::back_inserter(kept));
  return kept;
}

// Whether every directory on the way from root to `relative`'s parent is a real directory (not a
// link): a tracked path under a directory since replaced by a link would read outside the tree.
class RealDirectories {
 public:
  explicit RealDirectories(fs::path root) : root_(std::move(root)) {}
  bool parent_is_real(const fs::path& relative) {
    const fs::path parent = relative.parent_path();
    if (parent.empty()) return true;
    if (real_.contains(parent.string())) return true;
    if (!parent_is_real(parent)) return false;
    struct stat info {};
    if (::lstat((root_ / parent).c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) return false;
    real_.insert(parent.string());
    return true;
  }

 private:
  fs::path root_;
  std::set<std::string> real_;
};

void select_entries(CodePlan& plan, const std::vector<std::string>& paths) {
  RealDirectories directories(plan.root);
  for (const auto& path : paths) {
    if (!directories.parent_is_real(path)) {
      plan.skipped.push_back({path, "a directory on its path is a symbolic link: not followed"});
      continue;
    }
    const fs::path full = plan.root / path;
    struct stat info {};
    if (::lstat(full.c_str(), &info) != 0) {
      if (errno == ENOENT || errno == ENOTDIR) continue;  // a tracked file deleted in the work tree
      throw CodeSnapshotError(fmt::format("code snapshot: cannot read {}: {}", full.string(), std::strerror(errno)));
    }
    if (S_ISREG(info.st_mode)) {
      plan.files.push_back({path, static_cast<std::uint64_t>(info.st_size), false, info.st_mode & 07777});
      plan.bytes += static_cast<std::uint64_t>(info.st_size);
    } else if (S_ISLNK(info.st_mode)) {
      std::error_code error;
      const auto target = fs::read_symlink(full, error).string();
      if (!error && link_stays_inside(path, target)) {
        plan.files.push_back({path, 0, true, 0});
      } else {
        plan.skipped.push_back({path, fmt::format("symbolic link to {}, outside the tree: not copied", target)});
      }
    } else if (S_ISDIR(info.st_mode)) {
      plan.skipped.push_back({path, "git submodule or nested repository: its files are not copied"});
    } else {
      plan.skipped.push_back({path, "not a regular file, link or directory: not copied"});
    }
  }
}

GitState read_git_state(const Git& git, const fs::path& root) {
  GitState state;
  const std::string top = root.string();
  auto head = git.run({"-C", top, "rev-parse", "-q", "--verify", "HEAD"});
  if (head.exit_code == 0) state.commit = first_line(head.out);
  // The diff, the slowest, beside the others.
  std::future<std::string> diff;
  if (!state.commit.empty()) {
    diff = std::async(std::launch::async, [&git, &top] {
      return git.output({"-C", top, "diff", "--binary", "--no-ext-diff", "--no-textconv", "HEAD"});
    });
  }
  auto branch = git.run({"-C", top, "symbolic-ref", "-q", "--short", "HEAD"});
  if (branch.exit_code == 0) state.branch = first_line(branch.out);
  auto remote = git.run({"-C", top, "config", "--get", "remote.origin.url"});
  if (remote.exit_code == 0) state.remote = without_credentials(first_line(remote.out));
  state.status = git.output({"-C", top, "status", "--porcelain"});
  state.dirty = !state.status.empty();
  if (diff.valid()) state.diff = diff.get();
  return state;
}

// The repository git finds for `start` (git looks only where plan_git_search allows): its top
// level; or, when it or git's own ownership check says it is not the user's, why; or neither,
// outside any work tree.
struct FoundRepository {
  std::optional<fs::path> top;
  std::optional<std::string> not_yours;
};

FoundRepository find_own_repository(const Git& git, const fs::path& start, uid_t user) {
  auto found = git.run({"-C", start.string(), "rev-parse", "--path-format=absolute", "--show-toplevel", "--git-dir",
                        "--git-common-dir"});
  if (found.exit_code != 0) {
    // git's own check (a repository reached through GIT_DIR, say): another user's too.
    if (auto refused = unsafe_repository_message(found.err, start)) return {std::nullopt, refused};
    return {};  // outside a work tree (or in a bare repository, or in .git itself)
  }
  std::vector<std::string> lines;
  for (std::string_view text = found.out; !text.empty();) {
    const auto end = text.find('\n');
    lines.emplace_back(text.substr(0, end));
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  if (lines.size() != 3 || lines[0].empty()) return {};
  if (auto foreign = foreign_git_part(lines[0], lines[1], lines[2], user)) {
    return {std::nullopt, foreign_repository_reason(start, *foreign)};
  }
  return {fs::path(lines[0]), std::nullopt};
}

// Another user's repository: no snapshot, with a warning; named as code.dir, the submission fails.
std::optional<CodePlan> not_your_repository(const CodeRequest& request, const std::string& reason,
                                            std::string* no_snapshot_warning) {
  if (request.dir) {
    throw CodeSnapshotError(fmt::format("code.dir: {} (name a directory of your own: copy the code there, or make "
                                        "it a git repository of yours; or take no snapshot with code: "
                                        "{{snapshot: false}})",
                                        reason));
  }
  if (no_snapshot_warning) {
    *no_snapshot_warning = fmt::format("{}, so trials run the files as they are when they start (submit from a "
                                       "git repository of your own, name your code with code: {{dir: PATH}}, or "
                                       "silence this with code: {{snapshot: false}})",
                                       reason);
  }
  return std::nullopt;
}

// Where trials start, relative to the snapshot's root: the submit directory when it is inside the
// tree (the job starts there), else the directory the snapshot was taken from; "" for the root.
std::string trial_workdir(const fs::path& submit_dir, const fs::path& start, const fs::path& root) {
  std::error_code error;
  const auto submit = fs::canonical(submit_dir, error);
  auto workdir = error ? fs::path() : submit.lexically_relative(root);
  if (!is_inside(workdir)) workdir = fs::canonical(start, error).lexically_relative(root);
  return workdir == "." || !is_inside(workdir) ? "" : workdir.string();
}

}  // namespace

std::optional<CodePlan> plan_code_snapshot(const CodeRequest& request, std::string* no_snapshot_warning) {
  const auto started = std::chrono::steady_clock::now();
  const fs::path start = request.dir.value_or(request.submit_dir);
  std::error_code error;
  if (request.dir && !fs::is_directory(*request.dir, error)) {
    throw CodeSnapshotError(fmt::format("code.dir: {} is not a directory (name the directory with the trainer's "
                                        "source, or leave code.dir out to snapshot the submit directory's git tree)",
                                        request.dir->string()));
  }
  if (!git_installed()) {
    if (!request.dir) return std::nullopt;
    throw CodeSnapshotError("code snapshot: git is not installed on this machine; dlx uses it to list and filter "
                            "code.dir (install git, or take no snapshot with code: {snapshot: false})");
  }
  // Only the user's own repository (code_repository.hpp).
  const uid_t user = ::geteuid();
  const auto search = plan_git_search(start, user);
  // A code.dir of the user's under another user's repository is a plain directory to git, which
  // never climbs past the ceiling into that repository.
  if (search.foreign && !(request.dir && search.foreign->above_ceiling)) {
    return not_your_repository(request, foreign_repository_reason(start, *search.foreign), no_snapshot_warning);
  }
  Git git;
  git.timeout = request.git_timeout;
  git.ceiling = search.ceiling;
  FoundRepository repository;
  if (search.run_git) repository = find_own_repository(git, start, user);
  if (repository.not_yours) return not_your_repository(request, *repository.not_yours, no_snapshot_warning);
  const bool in_git = repository.top.has_value();
  if (!in_git && !request.dir) return std::nullopt;

  CodePlan plan;
  plan.max_size = request.max_size;
  plan.root = in_git ? *repository.top : fs::canonical(start, error);
  if (error) throw CodeSnapshotError(fmt::format("code snapshot: cannot resolve {}: {}", start.string(), error.message()));
  plan.workdir = trial_workdir(request.submit_dir, start, plan.root);
  select_entries(plan, list_files(git, plan.root, in_git));
  if (plan.bytes > plan.max_size) throw CodeSnapshotError(over_cap_message(plan));
  if (in_git) {
    plan.git_pending = std::async(std::launch::async, [git, root = plan.root] {
                         return read_git_state(git, root);
                       }).share();
  }
  plan.planning_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return plan;
}

std::vector<LeftOutEntry> left_out_at_start(const CodePlan& plan) {
  const std::string prefix = plan.workdir.empty() ? "" : plan.workdir + "/";
  const auto top_name = [&prefix](const std::string& path) -> std::optional<std::string> {
    if (!path.starts_with(prefix) || path.size() == prefix.size()) return std::nullopt;
    const auto rest = std::string_view(path).substr(prefix.size());
    return std::string(rest.substr(0, rest.find('/')));
  };
  std::set<std::string> accounted;  // copied, or skipped and said so
  for (const auto& file : plan.files) {
    if (auto name = top_name(file.path)) accounted.insert(*name);
  }
  for (const auto& skipped : plan.skipped) {
    if (auto name = top_name(skipped.path)) accounted.insert(*name);
  }
  std::vector<LeftOutEntry> left;
  std::error_code error;
  for (auto it = fs::directory_iterator(plan.root / plan.workdir, error); !error && it != fs::directory_iterator();
       it.increment(error)) {
    const auto name = it->path().filename().string();
    if (name.starts_with('.') || name == "__pycache__" || accounted.contains(name)) continue;
    std::error_code status_error;
    const auto status = it->symlink_status(status_error);
    if (status_error) continue;
    LeftOutEntry entry{name, fs::is_directory(status), 0};
    if (fs::is_regular_file(status)) entry.bytes = it->file_size(status_error);
    left.push_back(std::move(entry));
  }
  std::sort(left.begin(), left.end(), [](const LeftOutEntry& a, const LeftOutEntry& b) { return a.name < b.name; });
  return left;
}

void finish_git_state(CodePlan& plan) {
  if (!plan.git_pending.valid()) return;
  auto pending = std::move(plan.git_pending);
  plan.git = pending.get();
}

}  // namespace dlx::store
