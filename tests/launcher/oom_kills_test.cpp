// SPDX-License-Identifier: Apache-2.0
// dlx-launch names an out-of-memory kill (oom_kills.hpp): where this process's memory cgroup is
// (/proc/self/cgroup and mountinfo as v1, v2, a hybrid host and a container see them), its
// oom_kill count and limit (files laid out as each version keeps them), and, where this machine
// lets a root test make a memory cgroup, a real trainer over its limit: the trial's record says
// "out of memory" instead of a bare SIGKILL.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "dlx/launch/oom_kills.hpp"
#include "dlx/record/trial_record.hpp"
#include "process_helpers.hpp"

using dlx::launch::memory_cgroup_of;
using dlx::launch::MemoryCgroup;
using dlx::launch::OomKills;
namespace fs = std::filesystem;

namespace {

const std::string kV1Mounts =
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime shared:9 - cgroup cgroup rw,cpu,cpuacct\n"
    "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime shared:12 - cgroup cgroup rw,memory\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
const std::string kV2Mounts = "29 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 "
                              "rw,nsdelegate,memory_recursiveprot\n";

void spit(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

}  // namespace

TEST_CASE("oom kills: this process's memory cgroup, as each cgroup layout shows it", "[launch][oom]") {
  // Slurm's task/cgroup on cgroup v1: the memory hierarchy (a line of its own, or shared).
  auto v1 = memory_cgroup_of("12:pids:/slurm/uid_1000/job_42/step_0/task_0\n"
                             "4:memory:/slurm/uid_1000/job_42/step_0/task_0\n0::/user.slice\n",
                             kV1Mounts);
  REQUIRE(v1);
  CHECK(v1->dir == "/sys/fs/cgroup/memory/slurm/uid_1000/job_42/step_0/task_0");
  CHECK_FALSE(v1->v2);
  // Cgroup v2 alone.
  auto v2 = memory_cgroup_of("0::/system.slice/slurmstepd.scope/job_42/step_0/user/task_0\n", kV2Mounts);
  REQUIRE(v2);
  CHECK(v2->dir == "/sys/fs/cgroup/system.slice/slurmstepd.scope/job_42/step_0/user/task_0");
  CHECK(v2->v2);
  // A container that sees only its own subtree, mounted at the root of its cgroup file system.
  auto contained = memory_cgroup_of("0::/kubepods/pod7/abc\n",
                                    "29 23 0:26 /kubepods/pod7/abc /sys/fs/cgroup ro - cgroup2 cgroup2 rw\n");
  REQUIRE(contained);
  CHECK(contained->dir == "/sys/fs/cgroup");
  // No memory controller anywhere, or a cgroup outside what is mounted here: none.
  CHECK_FALSE(memory_cgroup_of("3:cpu:/a\n", kV1Mounts.substr(0, kV1Mounts.find("35 "))));
  CHECK_FALSE(memory_cgroup_of("0::/elsewhere\n", "29 23 0:26 /kubepods /sys/fs/cgroup ro - cgroup2 cgroup2 rw\n"));
  CHECK_FALSE(memory_cgroup_of("", kV2Mounts));
}

TEST_CASE("oom kills: the count and the limit from each version's files", "[launch][oom]") {
  dlx::test::TempDir dir("oom-files");
  spit(dir.path() / "memory.events", "low 0\nhigh 0\nmax 12\noom 2\noom_kill 2\noom_group_kill 0\n");
  spit(dir.path() / "memory.max", "max\n");
  const OomKills v2(MemoryCgroup{dir.path(), true});
  CHECK(v2.count() == 2u);
  CHECK_FALSE(v2.limit_bytes());  // "max": no limit
  spit(dir.path() / "memory.max", "4294967296\n");
  CHECK(v2.limit_bytes() == 4294967296u);

  spit(dir.path() / "memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n");
  spit(dir.path() / "memory.limit_in_bytes", "9223372036854771712\n");  // v1's "no limit"
  const OomKills v1(MemoryCgroup{dir.path(), false});
  CHECK(v1.count() == 1u);
  CHECK_FALSE(v1.limit_bytes());
  spit(dir.path() / "memory.limit_in_bytes", "67108864\n");
  CHECK(v1.limit_bytes() == 67108864u);
  CHECK_FALSE(OomKills(MemoryCgroup{dir.path() / "gone", true}).count());

  CHECK(dlx::launch::oom_cause(1, 67108864) ==
        "out of memory: the kernel's OOM killer ended 1 process in this rank's memory cgroup (its limit: 67.1 MB)");
  CHECK(dlx::launch::oom_cause(3, std::nullopt) == "out of memory: the kernel's OOM killer ended 3 processes in this rank's memory cgroup");
}

// A real memory cgroup with a 64 MiB limit (root only, and where this machine's cgroup file system
// lets a test make one: a cgroup v1 memory hierarchy, or v2 with the memory controller enabled
// for its children), a fake one-rank trial step inside it whose trainer allocates 512 MiB.
TEST_CASE("oom kills: a trainer over its cgroup's memory limit fails as out of memory, not a bare SIGKILL",
          "[launch-cli][oom]") {
  const auto own = OomKills::of_this_process();
  std::ifstream self("/proc/self/cgroup"), mounts("/proc/self/mountinfo");
  const std::string cgroups((std::istreambuf_iterator<char>(self)), std::istreambuf_iterator<char>());
  const std::string mountinfo((std::istreambuf_iterator<char>(mounts)), std::istreambuf_iterator<char>());
  const auto parent = memory_cgroup_of(cgroups, mountinfo);
  if (::geteuid() != 0 || !own || !parent) {
    WARN("not run: needs root and a memory cgroup with an oom_kill count (" << (::geteuid() == 0 ? "none here" : "not root")
                                                                            << ")");
    return;
  }
  const fs::path cgroup = parent->dir / ("dlx-oom-test-" + std::to_string(::getpid()));
  std::error_code error;
  fs::create_directory(cgroup, error);
  const std::string limit_file = parent->v2 ? "memory.max" : "memory.limit_in_bytes";
  if (error || !(std::ofstream(cgroup / limit_file) << "67108864\n")) {
    fs::remove(cgroup, error);
    WARN("not run: cannot make a memory cgroup with a limit under " << parent->dir);
    return;
  }
  dlx::test::TempDir dir("oom-trial");
  fs::copy_file(fs::path(DLX_SOURCE_DIR) / "examples" / "grid.yaml", dir.path() / "experiment.yaml");
  std::ofstream(dir.path() / "experiment.yaml", std::ios::app) << "max_restarts: 3\n";
  std::map<std::string, std::string> env{
      {"SLURM_JOB_ID", "1234"}, {"SLURM_PROCID", "0"}, {"SLURM_STEP_NUM_TASKS", "2"}, {"SLURM_LOCALID", "0"},
      {"SLURM_NODEID", "0"}, {"SLURM_STEP_NUM_NODES", "2"}, {"SLURM_STEP_TASKS_PER_NODE", "1(x2)"},
      {"SLURM_STEP_NODELIST", "dlxfake[1-2]"}, {"SLURMD_NODENAME", "dlxfake1"}, {"SLURM_LAUNCH_NODE_IPADDR", "10.9.8.7"},
      {"DLX_EXPERIMENT_DIR", dir.path().string()}, {"DLX_TRIAL_ID", "1"}, {"MASTER_PORT", "29999"},
      {"DLX_HPARAMS", R"({"learning_rate":0.1,"batch_size":16,"epochs":5})"}};
  // dlx-launch joins the cgroup first; its trainer (a child) is in it too.
  const auto ran = dlx::test::run_with_env(
      env, {"/bin/sh", "-c",
            "echo $$ > '" + (cgroup / "cgroup.procs").string() + "' && exec '" + std::string(DLX_LAUNCH_BINARY) +
                "' -- /usr/bin/python3 -c 'x = bytearray(512 << 20); print(len(x))'"});
  fs::remove(cgroup, error);  // empty now: every process in it has exited
  INFO(ran.output);
  CHECK(ran.status == 85);  // a crash with restarts left: requeued, as before
  const auto record = dlx::record::load_trial_record(dir.path() / "trials" / "1" / "trial.h5");
  CHECK(record.last_error == "killed by SIGKILL (exit 137): out of memory: the kernel's OOM killer ended 1 process "
                             "in this rank's memory cgroup (its limit: 67.1 MB)");
  CHECK_THAT(ran.output, Catch::Contains("out of memory: the kernel's OOM killer ended 1 process in this rank's memory cgroup"));
}
