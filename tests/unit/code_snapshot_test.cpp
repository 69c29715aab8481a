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

// git refuses a work tree another user owns (CVE-2022-24765, safe.directory) with exit 128, as it
// refuses a directory outside any work tree: the snapshot must say which it is and how to fix it.
TEST_CASE("a work tree another user owns: git's refusal is named, with the fixes", "[code]") {
  const std::string refusal =
      "fatal: detected dubious ownership in repository at '/home/ann/repo'\n"
      "To add an exception for this directory, call:\n\n\tgit config --global --add safe.directory /home/ann/repo\n";
  const auto message = unsafe_repository_message(refusal, "/home/ann/repo/exp");
  REQUIRE(message);
  CHECK_THAT(*message, Catch::Contains("/home/ann/repo/exp is in a git work tree that another user owns"));
  CHECK_THAT(*message, Catch::Contains("git config --global --add safe.directory /home/ann/repo)"));
  CHECK_THAT(*message, Catch::Contains("code: {snapshot: false}"));
  CHECK(unsafe_repository_message("fatal: unsafe repository ('/r' is owned by someone else)\n", "/r"));
  CHECK_FALSE(unsafe_repository_message("fatal: not a git repository (or any of the parent directories): .git\n",
                                        "/r"));

  // The real git on a real repository owned by another user (as root: chown; otherwise git's own
  // switch for its tests, which makes it judge the repository as another user's).
  TempDir scratch;
  const fs::path repo = scratch.path / "repo";
  git(scratch.path, {"init", "-q", repo.string()});
  write(repo / "train.py", "x\n");
  // A safe.directory in this machine's own configuration would trust it: none is read.
  ::setenv("GIT_CONFIG_GLOBAL", "/dev/null", 1);
  ::setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
  if (::geteuid() == 0) {
    REQUIRE(::chown(repo.c_str(), 65534, 65534) == 0);
  } else {
    ::setenv("GIT_TEST_ASSUME_DIFFERENT_OWNER", "1", 1);
  }
  CodeRequest request;
  request.submit_dir = repo;
  request.max_size = 1'000'000;
  CHECK_THROWS_WITH(plan_code_snapshot(request),
                    Catch::Contains(repo.string() + " is in a git work tree that another user owns") &&
                        Catch::Contains("dubious ownership") && Catch::Contains("safe.directory " + repo.string()) &&
                        Catch::Contains("code: {snapshot: false}"));
  request.dir = repo;  // named as code.dir: refused too, not copied as a plain directory
  CHECK_THROWS_WITH(plan_code_snapshot(request), Catch::Contains("another user owns"));
  for (const char* name : {"GIT_TEST_ASSUME_DIFFERENT_OWNER", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM"}) ::unsetenv(name);
}
