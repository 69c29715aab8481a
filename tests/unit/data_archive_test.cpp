// SPDX-License-Identifier: Apache-2.0
// Hostile archives staged into the node-local cache (data/src/unpack.hpp): every kind of tar slip,
// a "." that is a link (issue 31, finding 5), entries that are neither files, directories nor
// links, and archives whose unpacked size passes the cache's cap (finding 9). Each is refused with
// its message, leaves no entry and no unfinished copy, and touches nothing outside the cache.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "dlx/common/unique_fd.hpp"
#include "dlx/data/stage.hpp"
#include "hostile_tar.hpp"
#include "unpack.hpp"  // data/src: the unpack's own guard
#include "searcher_temp_dir.hpp"

namespace fs = std::filesystem;
using dlx::data::DataError;
using dlx::data::StagedData;
using dlx::data::StageRequest;
using dlx::testing::TarEntry;
using dlx::testing::tar_directory;
using dlx::testing::tar_fifo;
using dlx::testing::tar_file;
using dlx::testing::tar_hardlink;
using dlx::testing::tar_symlink;
using dlx::testing::tar_zeros;
using dlx::testing::write_tar;
using Catch::Matchers::Contains;

namespace {

// A fresh directory with local/ (the node-local base) and team/, a group-shared 2775 directory
// outside the cache holding a group-writable results/ (2775) and a file, as a lab's shared
// directory would.
struct Scratch {
  dlx::testing::TempDir temp;
  fs::path path = temp.path;
  fs::path local = path / "local";
  fs::path team = path / "team";
  Scratch() {
    fs::create_directories(local);
    fs::create_directories(team / "results");
    std::ofstream(team / "results" / "r.txt") << "the team's results\n";
    REQUIRE(::chmod(team.c_str(), 02775) == 0);
    REQUIRE(::chmod((team / "results").c_str(), 02775) == 0);
    REQUIRE(::chmod((team / "results" / "r.txt").c_str(), 0664) == 0);
  }
  fs::path cache() const { return dlx::data::user_cache_dir(local); }
  StageRequest request(const fs::path& source) const {
    StageRequest request;
    request.sources = {source};
    request.local_root = local;
    return request;
  }
};

mode_t mode_of(const fs::path& path) {
  struct stat status {};
  REQUIRE(::lstat(path.c_str(), &status) == 0);
  return status.st_mode & 07777;
}

// The team's directory exactly as the test made it.
void check_team_untouched(const Scratch& scratch) {
  CHECK(mode_of(scratch.team) == 02775);
  CHECK(mode_of(scratch.team / "results") == 02775);
  CHECK(mode_of(scratch.team / "results" / "r.txt") == 0664);
  std::ifstream in(scratch.team / "results" / "r.txt");
  CHECK(std::string(std::istreambuf_iterator<char>(in), {}) == "the team's results\n");
  CHECK(std::distance(fs::directory_iterator(scratch.team), fs::directory_iterator()) == 1);
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

// Nothing of a refused archive is left: no entry, no unfinished copy, no entry directory.
void check_nothing_left(const Scratch& scratch) {
  CHECK(dlx::data::list_cache(scratch.local).empty());
  for (const auto& entry : fs::directory_iterator(scratch.cache())) {
    const std::string name = entry.path().filename().string();
    INFO(name);
    CHECK(name.ends_with(".lock"));  // only the entry's (free) lock file may stay
  }
}

}  // namespace

TEST_CASE("a tar whose \".\" is a link is refused, and a shared directory outside keeps its modes", "[data]") {
  Scratch scratch;
  const fs::path tar = scratch.path / "dot-link.tar";
  write_tar(tar, {tar_symlink(".", scratch.team.string()), tar_file("data.txt", "the archive's\n")});
  CHECK(stage_error(scratch.request(tar)) ==
        fmt::format("cannot unpack {}: the entry '.' is a symbolic link to '{}', not a directory: unpacked, it would "
                    "replace the directory the trials read (an archive's \".\" may only be a directory) (check the "
                    "archive with `tar -tvf` or `unsquashfs -lls`, or stage its unpacked directory instead)",
                    tar.string(), scratch.team.string()));
  check_nothing_left(scratch);
  check_team_untouched(scratch);

  SECTION("as './', or as a hard link, or as a file: refused the same way") {
    for (const TarEntry& top : {tar_symlink("./", scratch.team.string()), tar_hardlink("./.", "data.txt"),
                                tar_file(".", "a file in the directory's place")}) {
      write_tar(tar, {tar_file("data.txt", "x"), top});
      CHECK_THAT(stage_error(scratch.request(tar)),
                 Contains(fmt::format("cannot unpack {}: the entry '{}' is ", tar.string(), top.name)) &&
                     Contains(", not a directory: unpacked, it would replace the directory the trials read"));
      check_nothing_left(scratch);
    }
  }
  SECTION("dlx data gc after it (and after the other entries): the team's directory is untouched") {
    dlx::data::GcRequest all;
    all.all = true;
    dlx::data::collect_garbage(scratch.local, all);
    check_team_untouched(scratch);
  }
  SECTION("a \".\" directory is the unpacked directory itself: its mode does not apply, the rest unpacks") {
    write_tar(tar, {tar_directory("./", 0777), tar_file("./data.txt", "kept\n")});
    auto staged = StagedData::stage(scratch.request(tar), nullptr);
    const fs::path dir = staged.datasets().front().dir;
    CHECK(mode_of(dir) == 0700);
    std::ifstream in(dir / "data.txt");
    CHECK(std::string(std::istreambuf_iterator<char>(in), {}) == "kept\n");
  }
}

TEST_CASE("tar slip of every kind is refused and writes nothing outside", "[data]") {
  Scratch scratch;
  const fs::path outside = scratch.path / "outside";
  fs::create_directories(outside);
  std::ofstream(outside / "victim.txt") << "untouched\n";
  const fs::path tar = scratch.path / "slip.tar";
  struct Case {
    const char* what;
    std::vector<TarEntry> entries;
    std::string expected;
  };
  const std::string long_dir(150, 'd');  // past ustar's 100 characters: a GNU long name
  const std::vector<Case> cases = {
      {"a name with ..", {tar_file("../outside/victim.txt", "pwned")},
       "the entry '../outside/victim.txt' would land outside the unpacked directory"},
      {"an absolute name", {tar_file((outside / "victim.txt").string(), "pwned")},
       fmt::format("the entry '{}' would land outside the unpacked directory", (outside / "victim.txt").string())},
      {"a GNU long name with ..", {tar_file(long_dir + "/../../outside/victim.txt", "pwned")},
       fmt::format("the entry '{}/../../outside/victim.txt' would land outside", long_dir)},
      {"a link, then a file through it",
       {tar_symlink("escape", outside.string()), tar_file("escape/victim.txt", "pwned")},
       "escape/victim.txt"},
      {"a relative link, then a file through it",
       {tar_symlink("up", "../../../outside"), tar_file("up/new.txt", "pwned")},
       "up/new.txt"},
      {"a hard link to an absolute name", {tar_hardlink("h", (outside / "victim.txt").string())},
       fmt::format("the entry '{}' would land outside the unpacked directory", (outside / "victim.txt").string())},
      {"a hard link with ..", {tar_hardlink("h", "../outside/victim.txt")},
       "the entry '../outside/victim.txt' would land outside the unpacked directory"},
      {"a hard link through a link",
       {tar_symlink("escape", outside.string()), tar_hardlink("h", "escape/victim.txt")},
       "escape/victim.txt"},
      {"a FIFO", {tar_fifo("pipe")},
       "the entry 'pipe' is a FIFO: dlx unpacks only files, directories and symbolic links"},
  };
  for (const auto& slip : cases) {
    INFO(slip.what);
    write_tar(tar, slip.entries);
    const std::string message = stage_error(scratch.request(tar));
    CHECK_THAT(message, Contains("cannot unpack " + tar.string() + ": ") && Contains(slip.expected));
    check_nothing_left(scratch);
    CHECK(std::distance(fs::directory_iterator(outside), fs::directory_iterator()) == 1);
    std::ifstream in(outside / "victim.txt");
    CHECK(std::string(std::istreambuf_iterator<char>(in), {}) == "untouched\n");
    struct stat victim {};
    REQUIRE(::stat((outside / "victim.txt").c_str(), &victim) == 0);
    CHECK(victim.st_nlink == 1);  // no hard link to it was made anywhere
  }
}

TEST_CASE("an archive counts with its unpacked size against the cap and is refused before it is written",
          "[data]") {
  Scratch scratch;
  // 64 MiB of zeros: a few kB compressed.
  const fs::path tar = scratch.path / "bomb.tar.zst";
  write_tar(tar, {tar_zeros("zeros.bin", std::size_t{64} << 20)}, ARCHIVE_FILTER_ZSTD);
  REQUIRE(fs::file_size(tar) < 64 * 1024);
  auto request = scratch.request(tar);
  request.policy.max_bytes = 10'000'000;
  CHECK(stage_error(request) ==
        fmt::format("cannot stage {}: unpacked, it holds more than the site's cap on your data cache on a node, "
                    "10.0 MB (limits: data: max_bytes in the site file; stage a smaller dataset)",
                    tar.string()));
  check_nothing_left(scratch);

  SECTION("under a cap it fits: staged, counted with its unpacked bytes") {
    request.policy.max_bytes = std::uint64_t{100} << 20;
    auto staged = StagedData::stage(request, nullptr);
    CHECK(staged.datasets().front().bytes == (std::uint64_t{64} << 20));
    CHECK(dlx::data::list_cache(scratch.local).front().bytes == (std::uint64_t{64} << 20));
  }
  SECTION("a free entry is evicted to make room for the unpacked size, not the archive's") {
    std::ofstream(scratch.path / "small.bin") << std::string(40 << 20, 's');
    request.policy.max_bytes = std::uint64_t{100} << 20;
    const auto small = scratch.request(scratch.path / "small.bin");
    const std::string small_key = StagedData::stage(small, nullptr).datasets().front().key;  // released
    auto staged = StagedData::stage(request, nullptr);
    const auto left = dlx::data::list_cache(scratch.local);
    REQUIRE(left.size() == 1);
    CHECK(left.front().key == staged.datasets().front().key);
    CHECK_FALSE(fs::exists(scratch.cache() / small_key));
  }
  SECTION("a squashfs image too") {
    fs::create_directories(scratch.path / "content");
    std::ofstream(scratch.path / "content" / "zeros.bin") << std::string(std::size_t{32} << 20, '\0');
    const fs::path image = scratch.path / "bomb.sqfs";
    REQUIRE(std::system(fmt::format("mksquashfs '{}' '{}' -quiet -no-progress >/dev/null",
                                    (scratch.path / "content").string(), image.string()).c_str()) == 0);
    REQUIRE(fs::file_size(image) < 64 * 1024);
    auto squash = scratch.request(image);
    squash.policy.max_bytes = 10'000'000;
    CHECK(stage_error(squash) ==
          fmt::format("cannot stage {}: unpacked, it holds more than the site's cap on your data cache on a node, "
                      "10.0 MB (limits: data: max_bytes in the site file; stage a smaller dataset)",
                      image.string()));
    check_nothing_left(scratch);
    squash.policy.max_bytes = std::uint64_t{64} << 20;
    CHECK(StagedData::stage(squash, nullptr).datasets().front().bytes == (std::uint64_t{32} << 20));
  }
}

TEST_CASE("the unpack itself stops at the bytes counted: an archive that grew since is cut off", "[data]") {
  // unpack_archive's own guard (data/src/unpack.hpp), for an archive replaced between the count and
  // the unpack: given a budget below what the archive holds, it stops with the message.
  Scratch scratch;
  const fs::path staging = scratch.path / "staging";
  fs::create_directories(staging);
  const dlx::UniqueFd fd(::open(staging.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  REQUIRE(fd);
  SECTION("a tar: stopped before the file past the budget is written") {
    const fs::path tar = scratch.path / "grown.tar";
    write_tar(tar, {tar_file("first.bin", std::string(1000, 'a')), tar_zeros("second.bin", 1 << 20)});
    CHECK_THROWS_WITH(dlx::data::unpack_archive(tar, dlx::data::SourceKind::tar_archive, fd.get(), staging, 1000),
                      fmt::format("cannot unpack {}: it unpacks to more than the 1.00 kB it held when it was counted "
                                  "(was it replaced while it was staged? stage an archive no job is writing, or "
                                  "retry) (check the archive with `tar -tvf` or `unsquashfs -lls`, or stage its "
                                  "unpacked directory instead)",
                                  tar.string()));
    CHECK(fs::file_size(staging / "first.bin") == 1000);
    CHECK_FALSE(fs::exists(staging / "second.bin"));
  }
  SECTION("a squashfs image: counted once unsquashfs is done") {
    fs::create_directories(scratch.path / "content");
    std::ofstream(scratch.path / "content" / "data.bin") << std::string(5000, 'd');
    const fs::path image = scratch.path / "grown.sqfs";
    REQUIRE(std::system(fmt::format("mksquashfs '{}' '{}' -quiet -no-progress >/dev/null",
                                    (scratch.path / "content").string(), image.string()).c_str()) == 0);
    CHECK_THROWS_WITH(
        dlx::data::unpack_archive(image, dlx::data::SourceKind::squashfs_image, fd.get(), staging, 4999),
        Contains(fmt::format("cannot unpack {}: it unpacked to 5.00 kB, more than the 5.00 kB its listing showed",
                             image.string())));
    REQUIRE(dlx::data::unpacked_size(image, dlx::data::SourceKind::squashfs_image, 1 << 20) == 5000U);
  }
}
