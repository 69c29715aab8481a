// SPDX-License-Identifier: Apache-2.0
// The code snapshot (store/code_snapshot.hpp): its pure helpers, and plan + copy on real git
// repositories made here with the real git (tracked, modified, untracked, ignored, .dlxignore,
// deleted, links in and out of the tree, a submodule), and the bounded runner it uses for git.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "dlx/common/bounded_command.hpp"
#include "dlx/store/code_info.hpp"
#include "dlx/store/code_snapshot.hpp"

namespace fs = std::filesystem;
using namespace dlx::store;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "dlx-code-XXXXXX").string();
    path = ::mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

std::string read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

void git(const fs::path& repo, std::vector<std::string> args) {
  std::vector<std::string> argv{"git", "-C", repo.string(), "-c", "user.name=t", "-c", "user.email=t@example.org",
                                "-c", "protocol.file.allow=always", "-c", "init.defaultBranch=main"};
  argv.insert(argv.end(), args.begin(), args.end());
  const auto result = dlx::run_bounded(argv);
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
}

}  // namespace

TEST_CASE("split_nul splits git's -z lists", "[code]") {
  using namespace std::string_literals;
  CHECK(split_nul(""s).empty());
  CHECK(split_nul("a\0b c\0"s) == std::vector<std::string>{"a", "b c"});
  CHECK(split_nul("a\0b"s) == std::vector<std::string>{"a", "b"});
}

TEST_CASE("a link stays inside the tree only when its target does, lexically", "[code]") {
  CHECK(link_stays_inside("link", "train.py"));
  CHECK(link_stays_inside("a/b/link", "../../train.py"));
  CHECK(link_stays_inside("a/link", "./x/../y"));
  CHECK_FALSE(link_stays_inside("link", "../outside"));
  CHECK_FALSE(link_stays_inside("a/link", "../../outside"));
  CHECK_FALSE(link_stays_inside("a/link", "x/../../../outside"));
  CHECK_FALSE(link_stays_inside("link", "/etc/passwd"));
  CHECK_FALSE(link_stays_inside("link", ""));
}

TEST_CASE("credentials are dropped from the remote URL", "[code]") {
  CHECK(without_credentials("https://user:token@github.example/x/y.git") == "https://github.example/x/y.git");
  CHECK(without_credentials("https://github.example/x/y.git") == "https://github.example/x/y.git");
  CHECK(without_credentials("git@github.example:x/y.git") == "git@github.example:x/y.git");
  CHECK(without_credentials("ssh://git@host/path@v1") == "ssh://host/path@v1");
}

TEST_CASE("the over-cap message names the total, the cap, the biggest files and the fixes", "[code]") {
  CodePlan plan;
  plan.root = "/home/u/repo";
  plan.max_size = 1'000'000;
  plan.files = {{"small.py", 10, false}, {"data/big.bin", 900'000, false}, {"link", 0, true},
                {"model.pt", 300'000, false}};
  plan.bytes = 1'200'010;
  const auto message = over_cap_message(plan, 2);
  CHECK_THAT(message, Catch::Contains("/home/u/repo would be 1.20 MB in 4 files, over the limit of 1.00 MB"));
  CHECK_THAT(message, Catch::Contains("the biggest: data/big.bin (900 kB), model.pt (300 kB)"));
  CHECK_THAT(message, Catch::Contains("/home/u/repo/.dlxignore"));
  CHECK_THAT(message, Catch::Contains("code: {max_size: 500MB}"));
  CHECK_THAT(message, Catch::Contains("code: {snapshot: false}"));
  CHECK_THAT(message, !Catch::Contains("small.py"));
}

TEST_CASE("run_bounded captures output and kills a command's whole group at the deadline", "[code]") {
  auto ok = dlx::run_bounded({"sh", "-c", "printf 'a\\0b'; echo oops >&2; exit 3"});
  CHECK(ok.exit_code == 3);
  CHECK(ok.out == std::string("a\0b", 3));
  CHECK(ok.err == "oops\n");

  TempDir dir;
  const auto pid_file = dir.path / "pid";
  dlx::CommandLimits limits;
  limits.timeout = std::chrono::milliseconds(300);
  const auto started = std::chrono::steady_clock::now();
  try {
    dlx::run_bounded({"sh", "-c", "sleep 30 & echo $! > " + pid_file.string() + "; wait"}, limits);
    FAIL("the command should have been killed");
  } catch (const dlx::CommandError& e) {
    CHECK_THAT(std::string(e.what()), Catch::Contains("did not finish within 0 s and was killed"));
  }
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(5));
  const pid_t grandchild = std::stoi(read(pid_file));
  // The background sleep was in the group: gone, or a zombie waiting for init to reap it.
  for (int tries = 0; tries < 100 && ::kill(grandchild, 0) == 0; ++tries) {
    const auto stat = read(fs::path("/proc") / std::to_string(grandchild) / "stat");
    if (stat.find(") Z") != std::string::npos) break;
    ::usleep(10000);
  }
  const auto stat = read(fs::path("/proc") / std::to_string(grandchild) / "stat");
  CHECK((stat.empty() || stat.find(") Z") != std::string::npos));

  CHECK_THROWS_WITH(dlx::run_bounded({"/nonexistent/program"}), Catch::Contains("cannot run /nonexistent/program"));
}

TEST_CASE("a git work tree: what is copied, what is recorded", "[code]") {
  TempDir scratch;
  const fs::path repo = scratch.path / "repo";
  const fs::path sub_origin = scratch.path / "lib";
  fs::create_directories(repo);
  fs::create_directories(sub_origin);
  write(scratch.path / "outside.txt", "secret outside the tree\n");
  git(sub_origin, {"init", "-q"});
  write(sub_origin / "lib.py", "LIB = 1\n");
  git(sub_origin, {"add", "lib.py"});
  git(sub_origin, {"commit", "-qm", "lib"});

  git(repo, {"init", "-q"});
  write(repo / "train.py", "print('v1')\n");
  write(repo / "gone.py", "deleted after the commit\n");
  write(repo / ".gitignore", "*.log\n");
  write(repo / ".dlxignore", "data/\n*.ckpt\n");
  write(repo / "weights.ckpt", "tracked, but .dlxignore'd\n");
  write(repo / "exp" / "run.sh", "#!/bin/sh\n");
  ::chmod((repo / "exp" / "run.sh").c_str(), 0755);
  git(repo, {"add", "."});
  git(repo, {"submodule", "add", "-q", sub_origin.string(), "lib"});
  git(repo, {"commit", "-qm", "first"});
  git(repo, {"remote", "add", "origin", "https://me:token@git.example/repo.git"});
  write(repo / "train.py", "print('v2, not committed')\n");  // modified
  fs::remove(repo / "gone.py");                                // deleted
  write(repo / "new.py", "untracked\n");                       // untracked, kept
  write(repo / "run.log", "ignored by .gitignore\n");
  write(repo / "data" / "big.bin", std::string(4096, 'x'));    // ignored by .dlxignore
  fs::create_symlink("train.py", repo / "inside-link.py");
  fs::create_symlink("../outside.txt", repo / "outside-link.txt");
  fs::create_symlink("/etc/passwd", repo / "absolute-link");

  CodeRequest request;
  request.submit_dir = repo / "exp";
  request.max_size = 1'000'000;
  auto plan = plan_code_snapshot(request);
  REQUIRE(plan);
  CHECK(plan->root == fs::canonical(repo));
  CHECK(plan->workdir == "exp");
  CHECK_FALSE(plan->git);  // still being read, while the files would be copied
  finish_git_state(*plan);
  REQUIRE(plan->git);
  CHECK(plan->git->commit.size() == 40);
  CHECK(plan->git->branch == "main");
  CHECK(plan->git->remote == "https://git.example/repo.git");
  CHECK(plan->git->dirty);
  CHECK_THAT(plan->git->status, Catch::Contains(" M train.py"));
  CHECK_THAT(plan->git->status, Catch::Contains(" D gone.py"));
  CHECK_THAT(plan->git->diff, Catch::Contains("+print('v2, not committed')"));

  TempDir experiment;
  write_code_snapshot(*plan, experiment.path);
  const fs::path code = experiment.path / kCodeDirName;
  CHECK(read(code / "train.py") == "print('v2, not committed')\n");
  CHECK(read(code / "new.py") == "untracked\n");
  CHECK(read(code / ".gitignore") == "*.log\n");
  CHECK(fs::exists(code / "exp" / "run.sh"));
  CHECK((fs::status(code / "exp" / "run.sh").permissions() & fs::perms::owner_exec) != fs::perms::none);
  CHECK((fs::status(code / "train.py").permissions() & fs::perms::owner_write) == fs::perms::none);
  CHECK(fs::is_symlink(code / "inside-link.py"));
  CHECK(read(code / "inside-link.py") == "print('v2, not committed')\n");
  for (const char* absent : {"gone.py", "run.log", "data", "weights.ckpt", "outside-link.txt", "absolute-link", "lib"}) {
    INFO(absent);
    CHECK_FALSE(fs::exists(fs::symlink_status(code / absent)));
  }
  CHECK(read(experiment.path / kCodeDiffFileName) == plan->git->diff);
  // Nothing outside the tree was read into the copy.
  for (const auto& entry : fs::recursive_directory_iterator(code)) {
    if (entry.is_regular_file()) CHECK(read(entry.path()).find("secret outside") == std::string::npos);
  }
  // No staging directory is left beside code/.
  for (const auto& entry : fs::directory_iterator(experiment.path)) {
    CHECK_FALSE(entry.path().filename().string().starts_with(".tmp."));
  }

  const auto info = read_code_info(experiment.path);
  REQUIRE(info);
  CHECK((*info)["commit"] == plan->git->commit);
  CHECK((*info)["dirty"] == true);
  CHECK((*info)["workdir"] == "exp");
  CHECK((*info)["files"] == 6);  // .gitignore .dlxignore .gitmodules train.py new.py exp/run.sh
  CHECK((*info)["symlinks"] == 1);
  const std::string skipped = (*info)["skipped"].dump();
  CHECK_THAT(skipped, Catch::Contains("outside-link.txt"));
  CHECK_THAT(skipped, Catch::Contains("absolute-link"));
  CHECK_THAT(skipped, Catch::Contains("\"lib\""));
  CHECK_THAT(skipped, Catch::Contains("submodule"));
  CHECK(describe_code(*info) == plan->git->commit.substr(0, 12) + " (dirty)");

  // What the top of the start directory holds and the snapshot leaves out: nothing in exp/; at
  // the root, what .gitignore and .dlxignore exclude (not the skipped links and submodule, said
  // on their own, nor .git).
  CHECK(left_out_at_start(*plan).empty());
  plan->workdir = "";
  std::vector<std::string> left;
  for (const auto& entry : left_out_at_start(*plan)) {
    left.push_back(entry.name + (entry.directory ? "/" : " " + std::to_string(entry.bytes)));
  }
  CHECK(left == std::vector<std::string>{"data/", "run.log 22", "weights.ckpt 26"});

  // A node-local copy of the finished snapshot is the same tree.
  TempDir node;
  copy_code_tree(code, node.path / "copy");
  CHECK(read(node.path / "copy" / "train.py") == "print('v2, not committed')\n");
  CHECK(fs::is_symlink(node.path / "copy" / "inside-link.py"));
  CHECK(read(node.path / "copy" / "exp" / "run.sh") == "#!/bin/sh\n");
}

TEST_CASE("over the cap: the plan fails naming the biggest files", "[code]") {
  TempDir scratch;
  git(scratch.path, {"init", "-q"});
  write(scratch.path / "train.py", "x\n");
  write(scratch.path / "model.pt", std::string(3000, 'm'));
  CodeRequest request;
  request.submit_dir = scratch.path;
  request.max_size = 2000;
  try {
    plan_code_snapshot(request);
    FAIL("over the cap");
  } catch (const CodeSnapshotError& e) {
    CHECK_THAT(std::string(e.what()), Catch::Contains("over the limit of 2.00 kB"));
    CHECK_THAT(std::string(e.what()), Catch::Contains("the biggest: model.pt (3.00 kB), train.py (2 B)"));
  }
  // .dlxignore brings it under the cap; a repository without commits has no commit and no diff.
  write(scratch.path / ".dlxignore", "*.pt\n");
  auto plan = plan_code_snapshot(request);
  REQUIRE(plan);
  CHECK(plan->bytes == 2 + 5);
  finish_git_state(*plan);
  REQUIRE(plan->git);
  CHECK(plan->git->commit.empty());
  CHECK(plan->git->dirty);
}

TEST_CASE("outside git: only a named directory is copied, with .dlxignore", "[code]") {
  TempDir scratch;
  write(scratch.path / "src" / "train.py", "print(1)\n");
  write(scratch.path / "src" / "cache" / "x.bin", "cached\n");
  write(scratch.path / "src" / ".dlxignore", "cache/\n");
  CodeRequest request;
  request.submit_dir = scratch.path;
  request.max_size = 1'000'000;
  CHECK_FALSE(plan_code_snapshot(request));  // no code.dir and no git: nothing to snapshot

  request.dir = scratch.path / "src";
  auto plan = plan_code_snapshot(request);
  REQUIRE(plan);
  finish_git_state(*plan);
  CHECK_FALSE(plan->git);
  REQUIRE(plan->files.size() == 2);
  CHECK(plan->files[0].path == ".dlxignore");
  CHECK(plan->files[1].path == "train.py");
  CHECK(plan->workdir.empty());  // the submit directory is outside the named one

  request.dir = scratch.path / "missing";
  CHECK_THROWS_WITH(plan_code_snapshot(request), Catch::Contains("code.dir: " + (scratch.path / "missing").string() +
                                                                 " is not a directory"));
}

// git's own refusal of another user's repository (CVE-2022-24765, "dubious ownership") is quoted
// by its first line only: the rest is git's advice to trust the directory, never relayed.
TEST_CASE("git's refusal of another user's repository is named without its advice to trust it", "[code]") {
  const std::string refusal =
      "fatal: detected dubious ownership in repository at '/home/ann/repo'\n"
      "To add an exception for this directory, call:\n\n\tgit config --global --add safe.directory /home/ann/repo\n";
  const auto message = unsafe_repository_message(refusal, "/home/ann/repo/exp");
  REQUIRE(message);
  CHECK_THAT(*message, Catch::Contains("/home/ann/repo/exp is inside a git repository that is not yours (git: fatal: "
                                       "detected dubious ownership in repository at '/home/ann/repo')"));
  CHECK_THAT(*message, Catch::Contains("do not trust it with safe.directory"));
  CHECK_THAT(*message, !Catch::Contains("git config --global --add"));
  CHECK(unsafe_repository_message("fatal: unsafe repository ('/r' is owned by someone else)\n", "/r"));
  CHECK_FALSE(unsafe_repository_message("fatal: not a git repository (or any of the parent directories): .git\n",
                                        "/r"));
}

namespace {

// Whether `path` exists (the marker a hostile configuration's command would leave).
bool present(const fs::path& path) {
  std::error_code ignored;
  return fs::exists(fs::symlink_status(path, ignored));
}

// A program that leaves `marker` when git runs it (as fsmonitor, textconv or external diff).
fs::path marker_program(const fs::path& dir, const fs::path& marker) {
  const auto program = dir / "leave-marker.sh";
  write(program, "#!/bin/sh\ntouch " + marker.string() + "\n");
  ::chmod(program.c_str(), 0755);
  return program;
}

// This machine's git configuration is not read (a safe.directory there would change what git
// does); `global` is the user's ~/.gitconfig instead.
struct GitConfigScope {
  explicit GitConfigScope(const fs::path& global) {
    ::setenv("GIT_CONFIG_GLOBAL", global.c_str(), 1);
    ::setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
  }
  ~GitConfigScope() {
    ::unsetenv("GIT_CONFIG_GLOBAL");
    ::unsetenv("GIT_CONFIG_NOSYSTEM");
  }
};

mode_t mode_of(const fs::path& path) {
  struct stat info {};
  REQUIRE(::lstat(path.c_str(), &info) == 0);
  return info.st_mode & 07777;
}

}  // namespace

// Issue 31, finding 3: another user's `git init` in a shared directory above the submit directory,
// with a core.fsmonitor that leaves a marker. The snapshot never reads that repository (git is
// kept below it, never told to trust it): no snapshot, with a warning, and the marker never
// appears, even with safe.directory=* (what git's old advice led to). Owners other than the
// test's own user need root (chown).
TEST_CASE("another user's repository above the submit directory is never read", "[code]") {
  if (::geteuid() != 0) {
    WARN("not root: another user's files cannot be made here (the cluster test security_code_snapshot runs this)");
    return;
  }
  TempDir scratch;
  const auto marker = scratch.path / "fsmonitor-ran";
  const auto program = marker_program(scratch.path, marker);
  write(scratch.path / "gitconfig", "[safe]\n\tdirectory = *\n");
  GitConfigScope config(scratch.path / "gitconfig");
  // /shared: 1777, another user's repository (uid 65534) with a hostile fsmonitor.
  const fs::path shared = scratch.path / "shared";
  fs::create_directories(shared);
  git(shared, {"init", "-q"});
  git(shared, {"config", "core.fsmonitor", program.string()});
  write(shared / "mallory.py", "planted\n");
  for (const auto& entry : fs::recursive_directory_iterator(shared)) REQUIRE(::lchown(entry.path().c_str(), 65534, 65534) == 0);
  REQUIRE(::chown(shared.c_str(), 65534, 65534) == 0);
  REQUIRE(::chmod(shared.c_str(), 01777) == 0);
  // The user's own directories below it, no repository of theirs.
  const fs::path project = shared / "alice" / "project";
  write(project / "train.py", "print('alice')\n");

  CodeRequest request;
  request.submit_dir = project;
  request.max_size = 1'000'000;
  std::string warning;
  CHECK_FALSE(plan_code_snapshot(request, &warning));
  CHECK_THAT(warning, Catch::Contains(project.string() + " is inside a git repository that is not yours (" +
                                      (shared / ".git").string() + " belongs to nobody)"));
  CHECK_THAT(warning, Catch::Contains("do not trust it with safe.directory"));
  CHECK_THAT(warning, Catch::Contains("name your code with code: {dir: PATH}"));
  CHECK_FALSE(present(marker));

  // Named as code.dir, the user's own directory is copied as a plain one: git never climbs into
  // the other's repository, so none of its files or configuration count.
  request.dir = project;
  auto plan = plan_code_snapshot(request);
  REQUIRE(plan);
  finish_git_state(*plan);
  CHECK_FALSE(plan->git);
  REQUIRE(plan->files.size() == 1);
  CHECK(plan->files[0].path == "train.py");
  TempDir experiment;
  write_code_snapshot(*plan, experiment.path);
  CHECK_FALSE(present(experiment.path / kCodeDirName / "mallory.py"));
  CHECK_FALSE(present(marker));

  // A `.git` of another user's inside the user's own (group-writable) directory: refused as code.dir,
  // no snapshot without it.
  const fs::path group_dir = scratch.path / "group";
  write(group_dir / "train.py", "x\n");
  git(group_dir, {"init", "-q"});
  git(group_dir, {"config", "core.fsmonitor", program.string()});
  for (const auto& entry : fs::recursive_directory_iterator(group_dir / ".git")) REQUIRE(::lchown(entry.path().c_str(), 65534, 65534) == 0);
  REQUIRE(::chown((group_dir / ".git").c_str(), 65534, 65534) == 0);
  request.submit_dir = group_dir;
  request.dir = group_dir;
  CHECK_THROWS_WITH(plan_code_snapshot(request),
                    Catch::Contains("code.dir: " + group_dir.string() + " is inside a git repository that is not yours (" +
                                    (group_dir / ".git").string() + " belongs to nobody)") &&
                        Catch::Contains("name a directory of your own"));
  request.dir.reset();
  warning.clear();
  CHECK_FALSE(plan_code_snapshot(request, &warning));
  CHECK_THAT(warning, Catch::Contains("is inside a git repository that is not yours"));
  CHECK_FALSE(present(marker));

  // A submit directory of another user's: no snapshot, said; as code.dir: refused.
  const fs::path theirs = scratch.path / "theirs";
  write(theirs / "train.py", "x\n");
  REQUIRE(::chown(theirs.c_str(), 65534, 65534) == 0);
  request.submit_dir = theirs;
  warning.clear();
  CHECK_FALSE(plan_code_snapshot(request, &warning));
  CHECK_THAT(warning, Catch::Contains(theirs.string() + " belongs to nobody, not to you: dlx takes code only from your "
                                      "own directories and git repositories"));
  request.dir = theirs;
  CHECK_THROWS_WITH(plan_code_snapshot(request), Catch::Contains("code.dir: " + theirs.string() + " belongs to nobody"));
  CHECK_FALSE(present(marker));
}

// The user's own repository: its configuration's commands do not run either (fsmonitor, a diff
// driver's textconv, an external diff), and the snapshot is taken.
TEST_CASE("git runs no fsmonitor, textconv or external diff for the snapshot", "[code]") {
  TempDir scratch;
  const auto marker = scratch.path / "command-ran";
  const auto program = marker_program(scratch.path, marker);
  write(scratch.path / "gitconfig", "");
  GitConfigScope config(scratch.path / "gitconfig");
  const fs::path repo = scratch.path / "repo";
  fs::create_directories(repo);
  git(repo, {"init", "-q"});
  write(repo / "train.py", "v1\n");
  write(repo / ".gitattributes", "*.py diff=shown\n");
  git(repo, {"add", "."});
  git(repo, {"commit", "-qm", "first"});
  git(repo, {"config", "core.fsmonitor", program.string()});
  git(repo, {"config", "diff.shown.textconv", program.string()});
  git(repo, {"config", "diff.external", program.string()});
  write(repo / "train.py", "v2\n");
  CodeRequest request;
  request.submit_dir = repo;
  request.max_size = 1'000'000;
  auto plan = plan_code_snapshot(request);
  REQUIRE(plan);
  finish_git_state(*plan);
  REQUIRE(plan->git);
  CHECK_THAT(plan->git->diff, Catch::Contains("+v2"));
  CHECK_FALSE(present(marker));
}

// Issue 31, finding 6: a copy is never more open than its source.
TEST_CASE("the snapshot keeps each file's and directory's privacy", "[code]") {
  CHECK(copied_file_mode(0100644) == 0440);
  CHECK(copied_file_mode(0100600) == 0400);
  CHECK(copied_file_mode(0100755) == 0550);
  CHECK(copied_file_mode(0100700) == 0500);
  CHECK(copied_file_mode(0100666) == 0440);  // never writable, never others'
  CHECK(copied_file_mode(0100640) == 0440);
  CHECK(copied_file_mode(0100604) == 0400);
  CHECK(copied_directory_mode(040755) == 0750);
  CHECK(copied_directory_mode(040700) == 0700);
  CHECK(copied_directory_mode(040775) == 0750);

  TempDir scratch;
  write(scratch.path / "gitconfig", "");
  GitConfigScope config(scratch.path / "gitconfig");
  const fs::path repo = scratch.path / "repo";
  fs::create_directories(repo);
  git(repo, {"init", "-q"});
  write(repo / "train.py", "v1\n");
  write(repo / "run.sh", "#!/bin/sh\n");
  write(repo / "private" / "notes.txt", "mine\n");
  ::chmod(repo.c_str(), 0755);  // whatever the umask
  ::chmod((repo / "private" / "notes.txt").c_str(), 0644);
  ::chmod((repo / "train.py").c_str(), 0644);
  ::chmod((repo / "run.sh").c_str(), 0755);
  git(repo, {"add", "."});
  git(repo, {"commit", "-qm", "first"});
  write(repo / "train.py", "v2\n");                            // a diff, so code.diff is written
  write(repo / "credentials.env", "TOKEN=secret\n");            // untracked, the owner's only
  ::chmod((repo / "credentials.env").c_str(), 0600);
  ::chmod((repo / "private").c_str(), 0700);
  CodeRequest request;
  request.submit_dir = repo;
  request.max_size = 1'000'000;
  auto plan = plan_code_snapshot(request);
  REQUIRE(plan);
  TempDir experiment;
  write_code_snapshot(*plan, experiment.path);
  const fs::path code = experiment.path / kCodeDirName;
  CHECK(mode_of(code / "credentials.env") == 0400);
  CHECK(mode_of(code / "train.py") == 0440);
  CHECK(mode_of(code / "run.sh") == 0550);
  CHECK(mode_of(code / "private") == 0700);
  CHECK(mode_of(code / "private" / "notes.txt") == 0440);  // behind its 0700 directory, as at its source
  // The diff holds tracked files' lines: the owner's only, since the group could not read every
  // file at its source. code.json holds names, no contents.
  CHECK(mode_of(experiment.path / kCodeDiffFileName) == 0400);
  CHECK(mode_of(experiment.path / kCodeInfoFileName) == 0440);

  // Every file and directory open to the group at its source: so is code.diff.
  fs::remove(repo / "credentials.env");
  ::chmod((repo / "private").c_str(), 0750);
  auto open_plan = plan_code_snapshot(request);
  REQUIRE(open_plan);
  TempDir open_experiment;
  write_code_snapshot(*open_plan, open_experiment.path);
  CHECK(mode_of(open_experiment.path / kCodeDiffFileName) == 0440);
  CHECK(mode_of(open_experiment.path / kCodeDirName / "private") == 0750);
}
