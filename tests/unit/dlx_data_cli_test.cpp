// SPDX-License-Identifier: Apache-2.0
// `dlx data ls|gc` (tools/dlx/cmd_data.cpp): the real dlx binary on a cache this test stages with
// the library, one entry held by this process, one free, one unfinished copy left behind.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/format.h>

#include "dlx/data/stage.hpp"
#include "run_program.hpp"
#include "searcher_temp_dir.hpp"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;

namespace {

struct Scratch {
  dlx::testing::TempDir temp;
  fs::path path = temp.path;
  Scratch() { fs::create_directories(path / "local"); fs::create_directories(path / "run"); }
};

void write_file(const fs::path& path, std::size_t bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << std::string(bytes, 'd');
}

dlx::testing::ProgramOutput dlx_data(const Scratch& scratch, std::vector<std::string> arguments) {
  std::vector<std::string> argv = {DLX_CLI_PATH, "data"};
  argv.insert(argv.end(), arguments.begin(), arguments.end());
  return dlx::testing::run_program(argv, scratch.path / "run");
}

}  // namespace

TEST_CASE("dlx data ls lists the entries and gc removes the free ones only", "[data]") {
  Scratch scratch;
  const fs::path local = scratch.path / "local";
  write_file(scratch.path / "held/a.bin", 2000);
  write_file(scratch.path / "free/b.bin", 3000);
  dlx::data::StageRequest request;
  request.local_root = local;
  request.sources = {scratch.path / "held"};
  auto held = dlx::data::StagedData::stage(request, nullptr);
  request.sources = {scratch.path / "free"};
  const std::string free_key = dlx::data::StagedData::stage(request, nullptr).datasets().front().key;
  const fs::path cache = dlx::data::user_cache_dir(local);
  fs::create_directory(cache / (".staging-" + free_key.substr(0, 10) + std::string(54, '0') + ".node.1"));

  auto ls = dlx_data(scratch, {"ls", "--dir", local.string()});
  REQUIRE(ls.status == 0);
  CHECK_THAT(ls.out, Contains(fmt::format("# data cache {}: 2 entries", cache.string())));
  CHECK_THAT(ls.out, Contains(held.datasets().front().key.substr(0, 16)));
  CHECK_THAT(ls.out, Contains(free_key.substr(0, 16)));
  CHECK_THAT(ls.out, Contains("2.00 kB") && Contains("3.00 kB") && Contains("# total 5.00 kB"));
  CHECK_THAT(ls.out, Contains((scratch.path / "held").string()) && Contains((scratch.path / "free").string()));
  // The held entry is in use, the other not.
  const auto held_line = ls.out.substr(ls.out.find(held.datasets().front().key.substr(0, 16)));
  CHECK(held_line.substr(0, held_line.find('\n')).find(" yes ") != std::string::npos);
  const auto free_line = ls.out.substr(ls.out.find(free_key.substr(0, 16)));
  CHECK(free_line.substr(0, free_line.find('\n')).find(" no ") != std::string::npos);

  auto gc = dlx_data(scratch, {"gc", "--dir", local.string(), "--all"});
  REQUIRE(gc.status == 0);
  CHECK_THAT(gc.out, Contains(fmt::format("removed {}", (cache / free_key).string())));
  CHECK_THAT(gc.out, Contains("removed 1 entries and 1 unfinished copies; 1 in use kept; 2.00 kB left"));
  CHECK(fs::exists(held.datasets().front().dir / "a.bin"));
  CHECK_FALSE(fs::exists(cache / free_key));

  held = dlx::data::StagedData();  // released
  auto capped = dlx_data(scratch, {"gc", "--dir", local.string(), "--max-bytes", "1kB"});
  REQUIRE(capped.status == 0);
  CHECK_THAT(capped.out, Contains("removed 1 entries and 0 unfinished copies; 0 in use kept; 0 B left"));
  CHECK(dlx_data(scratch, {"ls", "--dir", local.string()}).out.find(": 0 entries") != std::string::npos);
}

TEST_CASE("dlx data refuses bad arguments and a cache that is not the user's own", "[data]") {
  Scratch scratch;
  const fs::path local = scratch.path / "local";
  auto both = dlx_data(scratch, {"gc", "--dir", local.string(), "--all", "--max-bytes", "1GB"});
  CHECK(both.status == 2);
  CHECK_THAT(both.err, Contains("dlx: --all and --max-bytes exclude each other (choose one)"));
  auto size = dlx_data(scratch, {"gc", "--max-bytes", "lots"});
  CHECK(size.status == 2);
  CHECK_THAT(size.err, Contains("dlx: --max-bytes 'lots' is not a size (write a whole number with an optional unit"));
  auto unknown = dlx_data(scratch, {"rm"});
  CHECK(unknown.status == 2);
  CHECK_THAT(unknown.err, Contains("dlx: unknown dlx data subcommand 'rm' (ls, gc)"));

  const fs::path user_dir = dlx::data::user_cache_dir(local).parent_path();
  REQUIRE(::mkdir(user_dir.c_str(), 0700) == 0);
  REQUIRE(::chmod(user_dir.c_str(), 0777) == 0);
  auto open = dlx_data(scratch, {"ls", "--dir", local.string()});
  CHECK(open.status == 1);
  CHECK(open.err == "dlx data: refusing the node-local directory " + user_dir.string() +
                        ": its mode 0777 lets other users in (it must be 0700) (dlx keeps the data cache only in a "
                        "private directory of your own: remove it, or have your administrator remove it if another "
                        "user made it; choose another node-local directory with the experiment's `data: to:` (or "
                        "`dlx data --dir`), or ask your administrator)\n");

  // A base another user could change (here: writable by all without the sticky bit) is refused
  // by ls and gc alike, before anything in it is read or removed.
  REQUIRE(::chmod(user_dir.c_str(), 0700) == 0);
  REQUIRE(::chmod(local.c_str(), 0777) == 0);
  for (const char* command : {"ls", "gc"}) {
    auto shared = dlx_data(scratch, {command, "--dir", local.string()});
    CHECK(shared.status == 1);
    CHECK_THAT(shared.err, Contains("dlx data: refusing the node-local directory " + local.string() +
                                    " for the data cache: " + local.string() +
                                    " (mode 0777) is writable by its group and all users without the sticky bit"));
  }
  CHECK(fs::exists(user_dir));
}

TEST_CASE("dlx data gc removes links in an entry's place without following them", "[data]") {
  // What an older dlx could leave (an archive's "." link made the staging directory a link): a
  // staging directory and a marker-less entry that are links to a group-shared 2775 directory.
  Scratch scratch;
  const fs::path local = scratch.path / "local";
  const fs::path team = scratch.path / "team";
  fs::create_directories(team / "results");
  REQUIRE(::chmod(team.c_str(), 02775) == 0);
  REQUIRE(::chmod((team / "results").c_str(), 02775) == 0);
  write_file(scratch.path / "set/a.bin", 100);
  dlx::data::StageRequest request;
  request.local_root = local;
  request.sources = {scratch.path / "set"};
  const std::string key = dlx::data::StagedData::stage(request, nullptr).datasets().front().key;
  const fs::path cache = dlx::data::user_cache_dir(local);
  fs::remove(cache / (key + ".json"));
  fs::remove_all(cache / key);
  fs::create_directory_symlink(team, cache / key);
  fs::create_directory_symlink(team, cache / (".staging-" + key + ".node.999999"));

  auto gc = dlx_data(scratch, {"gc", "--dir", local.string()});
  INFO(gc.out << gc.err);
  REQUIRE(gc.status == 0);
  CHECK_THAT(gc.out, Contains("removed 0 entries and 2 unfinished copies"));
  CHECK_FALSE(fs::exists(fs::symlink_status(cache / key)));
  struct stat status {};
  REQUIRE(::stat(team.c_str(), &status) == 0);
  CHECK((status.st_mode & 07777) == 02775);
  REQUIRE(::stat((team / "results").c_str(), &status) == 0);
  CHECK((status.st_mode & 07777) == 02775);
}
