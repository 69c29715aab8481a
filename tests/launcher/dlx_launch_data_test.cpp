// SPDX-License-Identifier: Apache-2.0
// dlx-launch's data staging as a trial runs it: the real binary under a fake srun environment,
// staging into a temporary node-local directory through the real cache (dlx::data).
#include <catch2/catch.hpp>

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "dlx/record/trial_record.hpp"
#include "dlx/data/stage.hpp"
#include "dlx/launch/trial_data.hpp"
#include "fake_srun_step.hpp"
#include "process_helpers.hpp"
#include "run_in_child.hpp"

using dlx::test::run_with_env;
using dlx::test::TempDir;
namespace fs = std::filesystem;

namespace {

const std::string kDataLaunch = DLX_LAUNCH_BINARY;

std::string read_whole(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The grid example (2 nodes per trial) frozen with a data: section staging `sources` to
// <dir>/local/%n, or without `to:` (the site's default then decides) when `with_to` is false.
void freeze_with_data(const fs::path& dir, const std::vector<fs::path>& sources, bool with_to = true) {
  fs::create_directories(dir / "local" / "dlxfake1");  // each node's local directory (the site makes them)
  fs::create_directories(dir / "local" / "dlxfake2");
  fs::copy_file(fs::path(DLX_SOURCE_DIR) / "examples" / "grid.yaml", dir / "experiment.yaml");
  std::ofstream out(dir / "experiment.yaml", std::ios::app);
  out << "data:\n";
  if (with_to) out << "  to: " << (dir / "local" / "%n").string() << "\n";
  out << "  stage:\n";
  for (const auto& source : sources) out << "    - " << source.string() << "\n";
}

fs::path barrier_file(const fs::path& dir, int node) {
  return dir / "trials" / "1" / ".data.1234.0.0" / ("node-" + std::to_string(node));
}

void write_barrier_line(const fs::path& path, const std::string& line) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << line << "\n";
}

}  // namespace

TEST_CASE("launcher data: the trainer reads DLX_DATA_DIR, a node-local copy of the source", "[launch-cli][data]") {
  TempDir dir("data-one");
  const fs::path source = dir.path() / "shared" / "mnist";
  fs::create_directories(source / "train");
  std::ofstream(source / "train" / "images.bin") << std::string(100000, 'x');
  std::ofstream(source / "labels.txt") << "0 1 2\n";
  freeze_with_data(dir.path(), {source});
  write_barrier_line(barrier_file(dir.path(), 1), "ready dlxfake2");

  const std::string trainer = "echo \"dir=$DLX_DATA_DIR dirs=$DLX_DATA_DIRS\"; cat \"$DLX_DATA_DIR/labels.txt\" && "
                              "cmp \"$DLX_DATA_DIR/train/images.bin\" " + (source / "train" / "images.bin").string() +
                              " && echo same-bytes";
  auto first = run_with_env(dlx::test::two_node_step_env(dir.path(), 0), {kDataLaunch, "--", "sh", "-c", trainer});
  INFO(first.output);
  REQUIRE(first.status == 0);
  const std::string cache = (dir.path() / "local" / "dlxfake1" / ("dlx-" + std::to_string(::geteuid())) / "data").string();
  CHECK_THAT(first.output, Catch::Contains("dir=" + cache + "/"));
  CHECK_THAT(first.output, Catch::Contains("0 1 2") && Catch::Contains("same-bytes"));
  CHECK_THAT(first.output, Catch::Contains("dlx-launch: data on dlxfake1: " + source.string() + ": copied "));
  // DLX_DATA_DIRS holds the same single directory.
  const auto line = first.output.substr(first.output.find("dir="));
  const auto dir_value = line.substr(4, line.find(' ') - 4);
  CHECK_THAT(line, Catch::Contains("dirs=" + dir_value + "\n"));

  // The next trial on this node reuses the copy.
  auto second = run_with_env(dlx::test::two_node_step_env(dir.path(), 0), {kDataLaunch, "--", "sh", "-c", trainer});
  INFO(second.output);
  REQUIRE(second.status == 0);
  CHECK_THAT(second.output, Catch::Contains("dir=" + dir_value + " "));
  CHECK_THAT(second.output, Catch::Contains(": reused ") && Catch::Contains("same-bytes"));
}

TEST_CASE("launcher data: without data.to the cache goes under local_dir=, else Slurm's TmpFS, else TMPDIR",
          "[launch-cli][data]") {
  TempDir dir("data-site");
  std::ofstream(dir.path() / "weights.bin") << "w\n";
  freeze_with_data(dir.path(), {dir.path() / "weights.bin"}, /*with_to=*/false);
  write_barrier_line(barrier_file(dir.path(), 1), "ready dlxfake2");
  for (const char* place : {"site", "tmpfs/dlxfake1", "tmpdir"}) fs::create_directories(dir.path() / place);
  const std::string user_dir = "dlx-" + std::to_string(::geteuid());
  auto env = dlx::test::two_node_step_env(dir.path(), 0);
  env["TMPDIR"] = (dir.path() / "tmpdir").string();
  const std::vector<std::string> trainer = {kDataLaunch, "--", "sh", "-c", "echo \"dir=$DLX_DATA_DIR\""};

  auto tmpdir = run_with_env(env, trainer);
  INFO(tmpdir.output);
  REQUIRE(tmpdir.status == 0);
  CHECK_THAT(tmpdir.output, Catch::Contains("dir=" + (dir.path() / "tmpdir" / user_dir / "data").string() + "/"));

  env["DLX_SLURM_TMPFS"] = (dir.path() / "tmpfs" / "%n").string();  // as the plugin passes TmpFS on
  auto tmpfs = run_with_env(env, trainer);
  INFO(tmpfs.output);
  REQUIRE(tmpfs.status == 0);
  CHECK_THAT(tmpfs.output,
             Catch::Contains("dir=" + (dir.path() / "tmpfs" / "dlxfake1" / user_dir / "data").string() + "/"));

  env["DLX_SITE_LOCAL_DIR"] = (dir.path() / "site").string();
  auto site = run_with_env(env, trainer);
  INFO(site.output);
  REQUIRE(site.status == 0);
  CHECK_THAT(site.output, Catch::Contains("dir=" + (dir.path() / "site" / user_dir / "data").string() + "/"));
}

// Issue 35, item 4: `dlx data` expanded %u as "uid 1234" for a uid without a passwd entry, where
// dlx-launch expanded "1234", so `srun dlx data ls` looked in a directory the trials never used.
// Run as such a uid, the two programs' own paths to the node-local directory (dlx-launch's
// local_root_context, site_local_root and data_local_root; `dlx data`'s resolve_local_root over
// its environment) give the same directory, with the uid in digits.
TEST_CASE("launcher data: dlx-launch and dlx data expand %u alike for a uid without a passwd entry", "[launch][data]") {
  if (::geteuid() != 0) {
    WARN("not run: only root can become a uid without a passwd entry");
    return;
  }
  uid_t uid = 4000000;
  while (::getpwuid(uid) != nullptr) ++uid;
  const auto paths = dlx::testing::run_in_child(
      [] {
        dlx::env::TaskPlacement placement;
        placement.node_name = "dlxfake1";
        const dlx::env::EnvMap env{{"DLX_SITE_LOCAL_DIR", "/local/%u/%n"}};
        dlx::config::DataConfig data;
        data.to = "/data/%u";
        ::setenv("DLX_SITE_LOCAL_DIR", "/local/%u/%n", 1);  // as `srun dlx data ls` sees it
        ::setenv("SLURMD_NODENAME", "dlxfake1", 1);
        const auto local = dlx::launch::local_root_context(placement, env);
        return dlx::launch::site_local_root(local).string() + "\n" +
               dlx::launch::data_local_root(data, local).string() + "\n" +
               dlx::data::resolve_local_root(dlx::data::local_root_context_from_environment()).string();
      },
      60, dlx::testing::Credentials{uid, uid});
  REQUIRE(paths.status == 0);
  const std::string digits = std::to_string(uid);
  CHECK(paths.text == "/local/" + digits + "/dlxfake1\n/data/" + digits + "\n/local/" + digits + "/dlxfake1");
}

TEST_CASE("launcher data: two datasets give DLX_DATA_DIRS in stage: order and no DLX_DATA_DIR", "[launch-cli][data]") {
  TempDir dir("data-two");
  fs::create_directories(dir.path() / "a");
  std::ofstream(dir.path() / "a" / "one.txt") << "first\n";
  std::ofstream(dir.path() / "weights.bin") << "second\n";
  freeze_with_data(dir.path(), {dir.path() / "a", dir.path() / "weights.bin"});
  write_barrier_line(barrier_file(dir.path(), 1), "ready dlxfake2");
  auto env = dlx::test::two_node_step_env(dir.path(), 0);
  env["DLX_DATA_DIR"] = "/stale/from/the/job/script";
  auto result = run_with_env(env, {kDataLaunch, "--", "sh", "-c",
                                   "echo \"single=${DLX_DATA_DIR:-unset}\"; IFS=:; set -- $DLX_DATA_DIRS; "
                                   "echo count=$#; cat \"$1/one.txt\" \"$2/weights.bin\""});
  INFO(result.output);
  REQUIRE(result.status == 0);
  CHECK_THAT(result.output, Catch::Contains("single=unset") && Catch::Contains("count=2"));
  CHECK_THAT(result.output, Catch::Contains("first\nsecond\n"));
}

TEST_CASE("launcher data: rank 0 does not start when another node failed to stage, and names it", "[launch-cli][data]") {
  TempDir dir("data-failed-node");
  std::ofstream(dir.path() / "set.bin") << "data\n";
  freeze_with_data(dir.path(), {dir.path() / "set.bin"});
  write_barrier_line(barrier_file(dir.path(), 1),
             "failed dlxfake2: cannot stage the experiment's data on dlxfake2: no space left");
  const fs::path ran = dir.path() / "trainer-ran";
  auto result = run_with_env(dlx::test::two_node_step_env(dir.path(), 0), {kDataLaunch, "--", "touch", ran.string()});
  INFO(result.output);
  CHECK(result.status == 1);
  CHECK_THAT(result.output, Catch::Contains("dlx-launch: the data could not be staged on node 1 (dlxfake2): "
                                            "cannot stage the experiment's data on dlxfake2: no space left"));
  CHECK_THAT(result.output, !Catch::Contains("dlx-launch: dlx-launch:"));
  CHECK_FALSE(fs::exists(ran));
  const auto record = dlx::record::load_trial_record(dir.path() / "trials" / "1" / "trial.h5");
  CHECK(record.state == "failed");
  CHECK_THAT(record.stop_reason, Catch::Contains("could not be staged on node 1 (dlxfake2)"));

  // Told to the other ranks as a refusal: final on every rank, as on rank 0. The other rank (its
  // own copy done now, as if it had only been slow to say so) does not start its trainer and exits
  // 1 where a crash would have had it exit 85 (max_restarts 5) and the failed trial requeued.
  const auto told = read_whole(dir.path() / "trials" / "1" / ".crash.1234.0.0");
  CHECK_THAT(told, Catch::Contains("\"refused\":true") && Catch::Contains("\"where\":\"rank 0 on dlxfake1\""));
  auto other = run_with_env(dlx::test::two_node_step_env(dir.path(), 1), {kDataLaunch, "--", "touch", ran.string()});
  INFO(other.output);
  CHECK(other.status == 1);
  CHECK_THAT(other.output, Catch::Contains("dlx-launch: rank 0 on dlxfake1 refused the trial (the data could not be "
                                           "staged on node 1 (dlxfake2): "));
  CHECK_FALSE(fs::exists(ran));
}

TEST_CASE("launcher data: rank 0 gives up at the deadline naming the silent node", "[launch-cli][data]") {
  TempDir dir("data-silent-node");
  std::ofstream(dir.path() / "set.bin") << "data\n";
  freeze_with_data(dir.path(), {dir.path() / "set.bin"});
  // An earlier attempt's files say nothing about this one.
  write_barrier_line(dir.path() / "trials" / "1" / ".data.1234.0.7" / "node-1", "ready dlxfake2");
  auto env = dlx::test::two_node_step_env(dir.path(), 0);
  env["DLX_DATA_STAGE_TIMEOUT"] = "1";
  const fs::path ran = dir.path() / "trainer-ran";
  auto result = run_with_env(env, {kDataLaunch, "--", "touch", ran.string()});
  INFO(result.output);
  CHECK(result.status == 1);
  CHECK_THAT(result.output, Catch::Contains("dlx-launch: node 1 (SLURM_NODEID) of this trial did not stage the data "
                                            "within 1 s"));
  CHECK_FALSE(fs::exists(ran));
  CHECK_FALSE(fs::exists(dir.path() / "trials" / "1" / ".data.1234.0.7"));  // rank 0 tidied it
}

TEST_CASE("launcher data: a failed staging on another node is told to rank 0", "[launch-cli][data]") {
  TempDir dir("data-node-fails");
  freeze_with_data(dir.path(), {dir.path() / "vanished.bin"});
  auto result = run_with_env(dlx::test::two_node_step_env(dir.path(), 1), {kDataLaunch, "--", "true"});
  INFO(result.output);
  CHECK(result.status == 1);
  CHECK_THAT(result.output, Catch::Contains("dlx-launch: cannot stage the experiment's data on dlxfake2: "));
  CHECK_THAT(result.output, Catch::Contains("vanished.bin"));
  const auto told = read_whole(barrier_file(dir.path(), 1));
  CHECK_THAT(told, Catch::StartsWith("failed dlxfake2: cannot stage the experiment's data on dlxfake2: "));
}

TEST_CASE("launcher code: the node-local copy goes under the site's directory, and a bad one is refused with why",
          "[launch-cli][code]") {
  TempDir dir("code-site");
  dlx::test::snapshot_train_sh(dir.path());
  fs::copy_file(fs::path(DLX_SOURCE_DIR) / "examples" / "grid.yaml", dir.path() / "experiment.yaml");
  const std::string user_dir = "dlx-" + std::to_string(::geteuid());
  auto env = dlx::test::two_node_step_env(dir.path(), 0);
  const std::vector<std::string> trainer = {kDataLaunch, "--", "sh", "-c", "echo \"pwd=$(pwd)\"; sh train.sh"};

  fs::create_directories(dir.path() / "site");
  env["DLX_SITE_LOCAL_DIR"] = (dir.path() / "site").string();
  auto copied = run_with_env(env, trainer);
  INFO(copied.output);
  REQUIRE(copied.status == 0);
  CHECK_THAT(copied.output, Catch::Contains("pwd=" + (dir.path() / "site" / user_dir / "code-1234-0-0-1").string() +
                                            "\ntrained"));

  // Each refusal below fails its trial, in the searcher too: each case is another array task's.
  // A dlx-<uid> that others can write (another user could swap the copy): refused, nothing run.
  env["DLX_TRIAL_ID"] = "2";
  fs::create_directories(dir.path() / "open" / user_dir);
  fs::permissions(dir.path() / "open" / user_dir, fs::perms::all);
  env["DLX_SITE_LOCAL_DIR"] = (dir.path() / "open").string();
  auto open = run_with_env(env, trainer);
  INFO(open.output);
  CHECK(open.status != 0);
  const std::string where = "the code copy goes where the site's local_dir=, else Slurm's TmpFS, else $TMPDIR, else "
                            "/tmp says (ask your administrator)";
  CHECK_THAT(open.output, Catch::Contains("dlx-launch: refusing the node-local directory " +
                                          (dir.path() / "open" / user_dir).string() +
                                          ": its mode 0777 lets other users in (it must be 0700) (dlx keeps the "
                                          "node-local code copy only in a private directory of your own: remove it, "
                                          "or have your administrator remove it if another user made it; " + where +
                                          ")"));
  CHECK_THAT(open.output, !Catch::Contains("trained"));

  // A site directory that does not exist on the node.
  env["DLX_TRIAL_ID"] = "3";
  env["DLX_SITE_LOCAL_DIR"] = (dir.path() / "missing").string();
  auto missing = run_with_env(env, trainer);
  INFO(missing.output);
  CHECK(missing.status != 0);
  const std::string missing_dir = (dir.path() / "missing").string();
  CHECK_THAT(missing.output, Catch::Contains("dlx-launch: the node-local directory " + missing_dir +
                                             " for the node-local code copy does not exist on this node (cannot open " +
                                             missing_dir + ": No such file or directory; it must be an existing "
                                             "directory on every node: " + where + ")"));

  // A site directory another user could change (their /local/<your name>): refused, nothing made.
  if (::geteuid() == 0) {  // only root can give a directory away
    const fs::path theirs = dir.path() / "theirs";
    fs::create_directories(theirs);
    REQUIRE(::chown(theirs.c_str(), 65534, 65534) == 0);
    env["DLX_TRIAL_ID"] = "0";
    env["DLX_SITE_LOCAL_DIR"] = theirs.string();
    auto refused = run_with_env(env, trainer);
    INFO(refused.output);
    CHECK(refused.status != 0);
    CHECK_THAT(refused.output, Catch::Contains("dlx-launch: refusing the node-local directory " + theirs.string() +
                                               " for the node-local code copy: " + theirs.string() + " is owned by "));
    CHECK_THAT(refused.output, !Catch::Contains("trained"));
    CHECK(fs::is_empty(theirs));
  }
}
