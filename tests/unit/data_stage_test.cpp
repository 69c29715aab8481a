// SPDX-License-Identifier: Apache-2.0
// The node-local data cache (data/include/dlx/data/stage.hpp): real files, real processes (fork,
// kill -9), Debian's tar and mksquashfs for the archives. Every refusal's message is checked.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "dlx/data/stage.hpp"
#include "searcher_temp_dir.hpp"

namespace fs = std::filesystem;
using dlx::data::DataError;
using dlx::data::StagedData;
using dlx::data::StageRequest;
using Catch::Matchers::Contains;

namespace {

// A fresh directory (removed afterwards) with local/, the node-local root the cache goes under.
struct Scratch {
  dlx::testing::TempDir temp;
  fs::path path = temp.path;
  Scratch() { fs::create_directories(path / "local"); }
  fs::path local() const { return path / "local"; }
  fs::path cache() const { return dlx::data::user_cache_dir(local()); }
};

void write_file(const fs::path& path, std::size_t bytes, char fill = 'x') {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary);
  out << std::string(bytes, fill);
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

StageRequest request_for(const Scratch& scratch, std::vector<fs::path> sources) {
  StageRequest request;
  request.sources = std::move(sources);
  request.local_root = scratch.local();
  return request;
}

fs::path make_dataset(const fs::path& dir) {
  write_file(dir / "a.bin", 1000, 'a');
  write_file(dir / "sub/b.bin", 5000, 'b');
  write_file(dir / "sub/deeper/c.txt", 10, 'c');
  fs::permissions(dir / "sub/deeper/c.txt", fs::perms::owner_read | fs::perms::owner_exec);
  fs::create_symlink("a.bin", dir / "link-to-a");
  return dir;
}

ino_t inode_of(const fs::path& path) {
  struct stat info {};
  REQUIRE(::stat(path.c_str(), &info) == 0);
  return info.st_ino;
}

void set_mtime(const fs::path& path, std::int64_t seconds) {
  struct timespec times[2] = {{seconds, 0}, {seconds, 0}};
  REQUIRE(::utimensat(AT_FDCWD, path.c_str(), times, AT_SYMLINK_NOFOLLOW) == 0);
}

std::string stage_error(const StageRequest& request) {
  try {
    StagedData::stage(request, nullptr);
  } catch (const DataError& e) {
    return e.what();
  }
  FAIL("staging succeeded but should have failed");
  return "";
}

bool has_staging_leftover(const fs::path& cache) {
  for (const auto& entry : fs::directory_iterator(cache)) {
    if (entry.path().filename().string().starts_with(".staging-")) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("a directory is staged once and then reused with the same files", "[data]") {
  Scratch scratch;
  const fs::path source = make_dataset(scratch.path / "dataset");
  const auto request = request_for(scratch, {source});
  auto first = StagedData::stage(request, nullptr);
  REQUIRE(first.datasets().size() == 1);
  const auto& staged = first.datasets().front();
  CHECK_FALSE(staged.reused);
  CHECK(staged.bytes == 6010);
  CHECK(staged.key.size() == 64);
  CHECK(staged.dir == scratch.cache() / staged.key);
  CHECK(read_file(staged.dir / "sub/b.bin") == std::string(5000, 'b'));
  CHECK(fs::is_symlink(staged.dir / "link-to-a"));
  CHECK((fs::status(staged.dir / "sub/deeper/c.txt").permissions() & fs::perms::all) ==
        (fs::perms::owner_read | fs::perms::owner_exec));
  CHECK(fs::exists(scratch.cache() / (staged.key + ".json")));
  CHECK((fs::status(scratch.cache().parent_path()).permissions() & fs::perms::all) == fs::perms::owner_all);
  const ino_t inode = inode_of(staged.dir / "a.bin");

  auto second = StagedData::stage(request, nullptr);
  CHECK(second.datasets().front().reused);
  CHECK(second.datasets().front().seconds == 0);
  CHECK(second.datasets().front().dir == staged.dir);
  CHECK(inode_of(second.datasets().front().dir / "a.bin") == inode);
  CHECK(dlx::data::source_bytes({source}) == 6010);
}

TEST_CASE("a file source keeps its name and its mode", "[data]") {
  Scratch scratch;
  write_file(scratch.path / "train.npy", 4096);
  fs::permissions(scratch.path / "train.npy", fs::perms::owner_read | fs::perms::owner_exec);
  auto staged = StagedData::stage(request_for(scratch, {scratch.path / "train.npy"}), nullptr);
  const fs::path copy = staged.datasets().front().dir / "train.npy";
  CHECK(read_file(copy) == std::string(4096, 'x'));
  CHECK((fs::status(copy).permissions() & fs::perms::all) == (fs::perms::owner_read | fs::perms::owner_exec));
}

TEST_CASE("a changed source gets a new key, and checksum mode ignores a touch but not new content",
          "[data]") {
  Scratch scratch;
  const fs::path source = make_dataset(scratch.path / "dataset");
  auto request = request_for(scratch, {source});
  const std::string first = StagedData::stage(request, nullptr).datasets().front().key;

  SECTION("a new mtime") {
    set_mtime(source / "a.bin", 1000000);
    const auto again = StagedData::stage(request, nullptr);
    CHECK(again.datasets().front().key != first);
    CHECK_FALSE(again.datasets().front().reused);
  }
  SECTION("a new size") {
    write_file(source / "sub/b.bin", 5001, 'b');
    CHECK(StagedData::stage(request, nullptr).datasets().front().key != first);
  }
  SECTION("checksum: a touch keeps the key, a changed byte does not") {
    request.checksum = true;
    const std::string summed = StagedData::stage(request, nullptr).datasets().front().key;
    CHECK(summed != first);
    set_mtime(source / "a.bin", 1000000);
    auto touched = StagedData::stage(request, nullptr);
    CHECK(touched.datasets().front().key == summed);
    CHECK(touched.datasets().front().reused);
    write_file(source / "a.bin", 1000, 'z');
    CHECK(StagedData::stage(request, nullptr).datasets().front().key != summed);
  }
}

TEST_CASE("a copy killed midway is never used, and the next stager redoes it", "[data]") {
  Scratch scratch;
  const fs::path source = scratch.path / "big";
  write_file(source / "huge.bin", std::size_t{768} << 20, 'h');
  auto request = request_for(scratch, {source});
  request.copy_threads = 1;
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    try {
      StagedData::stage(request, nullptr);
    } catch (...) {
    }
    ::_exit(0);
  }
  // Kill it as soon as its copy has started.
  bool killed_midway = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!killed_midway && std::chrono::steady_clock::now() < deadline) {
    std::error_code error;
    if (fs::exists(scratch.cache(), error)) {
      for (const auto& entry : fs::directory_iterator(scratch.cache(), error)) {
        const fs::path partial = entry.path() / "huge.bin";
        if (entry.path().filename().string().starts_with(".staging-") && fs::file_size(partial, error) > 0 && !error) {
          ::kill(child, SIGKILL);
          killed_midway = true;
          break;
        }
      }
    }
    if (!killed_midway) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  REQUIRE(killed_midway);
  REQUIRE(WIFSIGNALED(status));
  CHECK(has_staging_leftover(scratch.cache()));
  CHECK(dlx::data::list_cache(scratch.local()).empty());  // no marker: not an entry

  auto staged = StagedData::stage(request, nullptr);
  CHECK_FALSE(staged.datasets().front().reused);
  CHECK(fs::file_size(staged.datasets().front().dir / "huge.bin") == (std::size_t{768} << 20));
  CHECK_FALSE(has_staging_leftover(scratch.cache()));
}

TEST_CASE("two processes staging the same entry at once make one copy", "[data]") {
  Scratch scratch;
  const fs::path source = scratch.path / "dataset";
  for (int i = 0; i < 64; ++i) write_file(source / fmt::format("f{}.bin", i), 1 << 20, static_cast<char>('a' + i % 26));
  const auto request = request_for(scratch, {source});
  std::vector<pid_t> children;
  for (int i = 0; i < 2; ++i) {
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      int code = 3;
      try {
        auto staged = StagedData::stage(request, nullptr);
        std::ofstream(scratch.path / fmt::format("child{}", i))
            << staged.datasets().front().reused << " " << inode_of(staged.datasets().front().dir / "f0.bin");
        code = 0;
      } catch (...) {
      }
      ::_exit(code);
    }
    children.push_back(child);
  }
  for (pid_t child : children) {
    int status = 0;
    ::waitpid(child, &status, 0);
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
  }
  int reused_0 = 0, reused_1 = 0;
  ino_t inode_0 = 0, inode_1 = 0;
  std::ifstream(scratch.path / "child0") >> reused_0 >> inode_0;
  std::ifstream(scratch.path / "child1") >> reused_1 >> inode_1;
  CHECK(reused_0 + reused_1 == 1);  // one copied, the other waited and reused
  CHECK(inode_0 == inode_1);
  CHECK(dlx::data::list_cache(scratch.local()).size() == 1);
}

TEST_CASE("eviction removes the least recently used entry nobody holds", "[data]") {
  Scratch scratch;
  for (const char* name : {"A", "B", "C"}) write_file(scratch.path / name / "data.bin", 1 << 20);
  auto request = request_for(scratch, {});
  request.policy.max_bytes = (std::uint64_t{5} << 20) / 2;  // room for two entries
  request.sources = {scratch.path / "A"};
  auto held = StagedData::stage(request, nullptr);  // A stays in use
  request.sources = {scratch.path / "B"};
  const fs::path b_dir = StagedData::stage(request, nullptr).datasets().front().dir;  // B released
  // A is the least recently used, but held: B must go instead.
  set_mtime(scratch.cache() / (held.datasets().front().key + ".json"), 1000);
  set_mtime(scratch.cache() / (b_dir.filename().string() + ".json"), 2000);
  request.sources = {scratch.path / "C"};
  auto c = StagedData::stage(request, nullptr);
  CHECK(fs::exists(held.datasets().front().dir / "data.bin"));
  CHECK_FALSE(fs::exists(b_dir));
  CHECK_FALSE(fs::exists(b_dir.string() + ".json"));
  CHECK(fs::exists(c.datasets().front().dir / "data.bin"));

  SECTION("nothing evictable left: the cap error names the sizes and the knob") {
    write_file(scratch.path / "D" / "data.bin", 1 << 20);
    request.sources = {scratch.path / "D"};
    CHECK_THAT(stage_error(request),
               Contains("cannot stage " + (scratch.path / "D").string() + " (1.05 MB): your data cache") &&
                   Contains("holds 2.10 MB in entries other trials are using, and with it would exceed the site "
                            "cap of 2.62 MB (limits: data: max_bytes in the site file"));
  }
  SECTION("an entry bigger than the cap") {
    write_file(scratch.path / "E" / "data.bin", 3 << 20);
    request.sources = {scratch.path / "E"};
    CHECK(stage_error(request) == "cannot stage " + (scratch.path / "E").string() +
                                      ": it needs 3.15 MB but the site caps your data cache on a node at 2.62 MB "
                                      "(limits: data: max_bytes in the site file; stage a smaller dataset)");
  }
  SECTION("the high watermark evicts every free entry down to the low one") {
    request.policy.max_bytes = 0;
    request.policy.high_watermark = 0.0;  // always over: evict all that is free
    request.policy.low_watermark = 0.0;
    write_file(scratch.path / "F" / "data.bin", 1000);
    request.sources = {scratch.path / "F"};
    c = StagedData();  // C released
    auto f = StagedData::stage(request, nullptr);
    const auto left = dlx::data::list_cache(scratch.local());
    REQUIRE(left.size() == 2);  // F and the held A
    CHECK(fs::exists(held.datasets().front().dir));
  }
}

TEST_CASE("a cache directory that is not the user's own private one is refused", "[data]") {
  Scratch scratch;
  write_file(scratch.path / "x.bin", 10);
  const auto request = request_for(scratch, {scratch.path / "x.bin"});
  const fs::path user_dir = scratch.cache().parent_path();
  const std::string fix = " (dlx keeps the data cache only in a private directory of your own: remove it, or have "
                          "your administrator remove it if another user made it; choose another node-local "
                          "directory with the experiment's `data: to:` (or `dlx data --dir`), or ask your "
                          "administrator)";
  SECTION("a symbolic link") {
    fs::create_directories(scratch.path / "elsewhere");
    fs::create_symlink(scratch.path / "elsewhere", user_dir);
    CHECK(stage_error(request) ==
          "refusing the node-local directory " + user_dir.string() + ": it is a symbolic link, not a directory" + fix);
    CHECK(fs::is_empty(scratch.path / "elsewhere"));
  }
  SECTION("open to others") {
    REQUIRE(::mkdir(user_dir.c_str(), 0755) == 0);
    ::chmod(user_dir.c_str(), 0755);
    CHECK(stage_error(request) == "refusing the node-local directory " + user_dir.string() +
                                      ": its mode 0755 lets other users in (it must be 0700)" + fix);
  }
  SECTION("data/ open to others") {
    REQUIRE(::mkdir(user_dir.c_str(), 0700) == 0);
    REQUIRE(::mkdir(scratch.cache().c_str(), 0700) == 0);
    ::chmod(scratch.cache().c_str(), 0770);
    CHECK(stage_error(request) == "refusing the node-local directory " + scratch.cache().string() +
                                      ": its mode 0770 lets other users in (it must be 0700)" + fix);
  }
  SECTION("another user's") {
    if (::geteuid() != 0) return;  // only root can give a directory away
    REQUIRE(::mkdir(user_dir.c_str(), 0700) == 0);
    REQUIRE(::chown(user_dir.c_str(), 65534, 65534) == 0);
    CHECK_THAT(stage_error(request), Contains("refusing the node-local directory " + user_dir.string() +
                                              ": it is owned by ") &&
                                         Contains(", not by you (") && Contains(fix));
  }
  SECTION("the local directory does not exist") {
    auto missing = request;
    missing.local_root = scratch.path / "no-such-dir";
    CHECK(stage_error(missing) ==
          "the node-local directory " + missing.local_root.string() + " for the data cache does not exist on this "
          "node (cannot open " + missing.local_root.string() + ": No such file or directory; it must be an existing "
          "directory on every node: choose another node-local directory with the experiment's `data: to:` (or `dlx "
          "data --dir`), or ask your administrator)");
  }
}

TEST_CASE("the node-local base and every directory above it must be root's or the user's, shared only if sticky",
          "[data]") {
  if (::geteuid() != 0) return;  // directories of another user are made with chown
  Scratch scratch;
  write_file(scratch.path / "x.bin", 10);
  auto request = request_for(scratch, {scratch.path / "x.bin"});
  const uid_t other = 65534;
  const auto refused = [&](const fs::path& base) {
    return "refusing the node-local directory " + base.string() + " for the data cache: ";
  };
  SECTION("a base another user owns (their /tmp/<your name>): refused, nothing made in it") {
    const fs::path base = scratch.path / "theirs";
    REQUIRE(::mkdir(base.c_str(), 0777) == 0);
    REQUIRE(::chown(base.c_str(), other, other) == 0);
    request.local_root = base;
    CHECK_THAT(stage_error(request),
               Contains(refused(base) + base.string() + " is owned by ") &&
                   Contains("whoever can change it could swap what dlx writes there for their own files (use a "
                            "directory that only you and root can change, such as /tmp, or a local_dir= made per user "
                            "by the site; choose another node-local directory with the experiment's `data: to:`"));
    CHECK(fs::is_empty(base));
  }
  SECTION("a base below another user's directory") {
    const fs::path theirs = scratch.path / "theirs";
    REQUIRE(::mkdir(theirs.c_str(), 0755) == 0);
    fs::create_directories(theirs / "base");
    REQUIRE(::chown(theirs.c_str(), other, other) == 0);
    request.local_root = theirs / "base";
    CHECK_THAT(stage_error(request), Contains(refused(theirs / "base") + theirs.string() + " is owned by "));
    CHECK(fs::is_empty(theirs / "base"));
  }
  SECTION("a base its group can write, without the sticky bit") {
    const fs::path base = scratch.path / "group";
    REQUIRE(::mkdir(base.c_str(), 0775) == 0);
    REQUIRE(::chmod(base.c_str(), 02775) == 0);
    request.local_root = base;
    CHECK_THAT(stage_error(request),
               Contains(refused(base) + base.string() + " (mode 2775) is writable by its group without the sticky "
                        "bit"));
  }
  SECTION("a sticky base every user can write, as /tmp: accepted") {
    const fs::path base = scratch.path / "tmp";
    REQUIRE(::mkdir(base.c_str(), 0700) == 0);
    REQUIRE(::chmod(base.c_str(), 01777) == 0);
    request.local_root = base;
    auto staged = StagedData::stage(request, nullptr);
    CHECK(staged.datasets().front().dir.string().starts_with((base / "dlx-0" / "data").string()));
    SECTION("where another user made dlx-<uid> first: refused (a denial of service, not a takeover)") {
      staged = StagedData();
      fs::remove_all(base / "dlx-0");
      REQUIRE(::mkdir((base / "dlx-0").c_str(), 0700) == 0);
      REQUIRE(::chown((base / "dlx-0").c_str(), other, other) == 0);
      CHECK_THAT(stage_error(request), Contains("refusing the node-local directory " + (base / "dlx-0").string() +
                                                ": it is owned by "));
    }
  }
}

TEST_CASE("bad sources are refused with the path and what to do", "[data]") {
  Scratch scratch;
  SECTION("missing") {
    const fs::path missing = scratch.path / "missing";
    CHECK(stage_error(request_for(scratch, {missing})) ==
          "cannot read " + missing.string() + ": No such file or directory (the data to stage must exist and be "
          "readable by you; fix the path in `data: stage:` or its permissions)");
    CHECK_THROWS_WITH(dlx::data::source_bytes({missing}), Contains("cannot read " + missing.string()));
  }
  SECTION("relative") {
    CHECK(stage_error(request_for(scratch, {"data/train"})) ==
          "cannot stage data/train: not an absolute path (the experiment's `data: stage:` paths are resolved against "
          "its directory before staging)");
  }
  SECTION("a FIFO inside") {
    fs::create_directories(scratch.path / "d");
    REQUIRE(::mkfifo((scratch.path / "d/pipe").c_str(), 0600) == 0);
    CHECK(stage_error(request_for(scratch, {scratch.path / "d"})) ==
          "cannot stage " + (scratch.path / "d/pipe").string() + ": it is a FIFO, not a file, a directory or a "
          "symbolic link (remove it from the data, or stage the directory's files without it)");
  }
}

TEST_CASE("archives are unpacked: tar through libarchive, squashfs through unsquashfs", "[data]") {
  Scratch scratch;
  make_dataset(scratch.path / "content");
  const auto run = [](const std::string& command) { REQUIRE(std::system(command.c_str()) == 0); };
  SECTION("a gzip tar made by tar") {
    run(fmt::format("tar -C '{}' -czf '{}/set.tar.gz' .", (scratch.path / "content").string(), scratch.path.string()));
    auto staged = StagedData::stage(request_for(scratch, {scratch.path / "set.tar.gz"}), nullptr);
    const fs::path dir = staged.datasets().front().dir;
    CHECK(read_file(dir / "sub/b.bin") == std::string(5000, 'b'));
    CHECK(fs::read_symlink(dir / "link-to-a") == "a.bin");
    CHECK(staged.datasets().front().bytes == 6010);
  }
  SECTION("a tar whose entry leaves the directory is refused") {
    write_file(scratch.path / "outside.txt", 3);
    run(fmt::format("tar -C '{}' -cPf '{}/evil.tar' '{}/outside.txt'", scratch.path.string(), scratch.path.string(),
                    scratch.path.string()));
    CHECK_THAT(stage_error(request_for(scratch, {scratch.path / "evil.tar"})),
               Contains("cannot unpack " + (scratch.path / "evil.tar").string() + ": the entry '" +
                        (scratch.path / "outside.txt").string() + "' would land outside the unpacked directory"));
    CHECK(dlx::data::list_cache(scratch.local()).empty());
    CHECK_FALSE(has_staging_leftover(scratch.cache()));
  }
  SECTION("a squashfs image") {
    run(fmt::format("mksquashfs '{}' '{}/set.sqfs' -quiet -no-progress >/dev/null", (scratch.path / "content").string(),
                    scratch.path.string()));
    auto staged = StagedData::stage(request_for(scratch, {scratch.path / "set.sqfs"}), nullptr);
    CHECK(read_file(staged.datasets().front().dir / "sub/deeper/c.txt") == "cccccccccc");
  }
  SECTION("without unsquashfs the message says what to install") {
    write_file(scratch.path / "set.squashfs", 100);
    const std::string saved_path = std::getenv("PATH");
    ::setenv("PATH", scratch.path.c_str(), 1);
    const std::string message = stage_error(request_for(scratch, {scratch.path / "set.squashfs"}));
    ::setenv("PATH", saved_path.c_str(), 1);
    CHECK(message == "cannot unpack " + (scratch.path / "set.squashfs").string() +
                         ": unsquashfs is not installed on this node (the site installs Debian's squashfs-tools; or "
                         "stage a tar archive or a directory instead) (check the archive with `tar -tvf` or "
                         "`unsquashfs -lls`, or stage its unpacked directory instead)");
  }
}

TEST_CASE("the default local directory: local_dir=, else TmpFS, else TMPDIR, else /tmp", "[data]") {
  dlx::data::LocalRootContext context;
  context.node_name = "node1";
  context.user_name = "alice";
  CHECK(dlx::data::resolve_local_root(context) == "/tmp");
  context.tmpdir = "relative/tmp";
  CHECK(dlx::data::resolve_local_root(context) == "/tmp");
  context.tmpdir = "/scratch/tmp";
  CHECK(dlx::data::resolve_local_root(context) == "/scratch/tmp");
  context.slurm_tmpfs = "/var/tmp/%h";  // an escape dlx does not expand: TmpFS is passed over
  CHECK(dlx::data::resolve_local_root(context) == "/scratch/tmp");
  context.slurm_tmpfs = "/var/tmp/%n";
  CHECK(dlx::data::resolve_local_root(context) == "/var/tmp/node1");
  context.local_dir_option = "/local/%n/%u/100%%";
  CHECK(dlx::data::resolve_local_root(context) == "/local/node1/alice/100%");
  context.local_dir_option = "/local/%x";
  CHECK_THROWS_WITH(dlx::data::resolve_local_root(context),
                    "the plugstack option local_dir= '/local/%x': unknown escape '%x' (only %n = node name, %u = user "
                    "name and %% are expanded)");
  context.local_dir_option = "local/%n";
  CHECK_THROWS_WITH(dlx::data::resolve_local_root(context),
                    "the plugstack option local_dir= 'local/%n' is not an absolute path (give the node-local "
                    "directory from /)");
}

TEST_CASE("dlx data's default reads the site's choices a job step was given, then TMPDIR", "[data]") {
  // Restores the process environment whatever the test does.
  struct SavedVariable {
    std::string name;
    std::optional<std::string> value;
    explicit SavedVariable(std::string variable) : name(std::move(variable)) {
      if (const char* current = std::getenv(name.c_str())) value = current;
    }
    ~SavedVariable() { value ? ::setenv(name.c_str(), value->c_str(), 1) : ::unsetenv(name.c_str()); }
  };
  const SavedVariable saved[] = {SavedVariable("DLX_SITE_LOCAL_DIR"), SavedVariable("DLX_SLURM_TMPFS"),
                                 SavedVariable("TMPDIR"), SavedVariable("SLURMD_NODENAME")};
  ::setenv("SLURMD_NODENAME", "n7", 1);
  ::setenv("TMPDIR", "/scratch/job", 1);
  ::unsetenv("DLX_SITE_LOCAL_DIR");
  ::unsetenv("DLX_SLURM_TMPFS");
  CHECK(dlx::data::resolve_local_root(dlx::data::local_root_context_from_environment()) == "/scratch/job");
  ::setenv("DLX_SLURM_TMPFS", "/var/tmp/slurm/%n", 1);
  CHECK(dlx::data::resolve_local_root(dlx::data::local_root_context_from_environment()) == "/var/tmp/slurm/n7");
  ::setenv("DLX_SITE_LOCAL_DIR", "/local/%n", 1);
  CHECK(dlx::data::resolve_local_root(dlx::data::local_root_context_from_environment()) == "/local/n7");
}
