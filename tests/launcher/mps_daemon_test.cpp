// SPDX-License-Identifier: Apache-2.0
// dlx-launch's CUDA MPS daemon for a packed task (launcher/launch/include/dlx/launch/mps_daemon.hpp)
// against a stand-in control program (tests/launcher/stand_ins/nvidia-cuda-mps-control) that
// behaves as NVIDIA's does: a daemon in a session of its own, a socket and a pid file in the pipe
// directory, "quit" on a later run's standard input. What is shown: the private directory and
// the variables the daemon and the clients get; the stop, also of a daemon that ignores "quit";
// each way start can fail says why and leaves nothing behind; the directory a killed dlx-launch
// left is removed by the next start, after its orphaned daemon was asked to quit, and a running
// daemon's is not; slots name their GPU as MPS does.
#include <catch2/catch.hpp>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "dlx/launch/launch_error.hpp"
#include "dlx/launch/mps_daemon.hpp"
#include "dlx/launch/task_slots.hpp"

namespace fs = std::filesystem;
using dlx::launch::MpsDaemon;

namespace {

std::string text_of(const fs::path& path) {
  std::ifstream in(path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// A temporary directory for the MPS directories and the record; PATH with the stand-in first
// (or without it) while the test runs.
struct MpsScene {
  fs::path tmp;
  fs::path record;
  std::string saved_path;
  dlx::env::EnvMap task_env;

  explicit MpsScene(bool with_control_program, const std::string& mode = "") {
    char pattern[] = "/tmp/dlx-mps-test.XXXXXX";
    tmp = ::mkdtemp(pattern);
    record = tmp / "record.txt";
    saved_path = std::getenv("PATH");
    const std::string stand_ins = std::string(DLX_SOURCE_DIR) + "/tests/launcher/stand_ins";
    ::setenv("PATH", ((with_control_program ? stand_ins + ":" : "") + "/usr/bin:/bin").c_str(), 1);
    ::setenv("DLX_TEST_MPS_RECORD", record.c_str(), 1);
    ::setenv("DLX_TEST_MPS_MODE", mode.c_str(), 1);
    task_env = {{"PATH", std::getenv("PATH")}, {"TMPDIR", tmp.string()}, {"SLURM_JOB_ID", "77"},
                {"CUDA_VISIBLE_DEVICES", "4,7"}, {"DLX_TEST_MPS_RECORD", record.string()},
                {"DLX_TEST_MPS_MODE", mode}};
  }
  ~MpsScene() {
    ::setenv("PATH", saved_path.c_str(), 1);
    ::unsetenv("DLX_TEST_MPS_RECORD");
    ::unsetenv("DLX_TEST_MPS_MODE");
    fs::remove_all(tmp);
  }
  // The MPS directories left in TMPDIR.
  int left_behind() const {
    int count = 0;
    for (const auto& entry : fs::directory_iterator(tmp)) count += entry.path().filename().string().starts_with("dlx-mps-");
    return count;
  }
};

// Running: not gone and not a zombie (this machine's init may be slow to reap the daemon, whose
// parent exited as a real daemon's does).
bool alive(pid_t pid) {
  if (::kill(pid, 0) != 0) return false;
  const std::string stat = text_of("/proc/" + std::to_string(pid) + "/stat");
  const auto close = stat.rfind(')');
  return close == std::string::npos || close + 2 >= stat.size() || stat[close + 2] != 'Z';
}

MpsDaemon::Waits short_waits() { return {std::chrono::milliseconds(1500), std::chrono::milliseconds(1500)}; }

}  // namespace

TEST_CASE("MPS: the daemon runs in a private directory, clients find it, stop ends it", "[launch][mps]") {
  MpsScene scene(true);
  auto daemon = MpsDaemon::start(scene.task_env, short_waits());
  const fs::path pipe = daemon->pipe_directory();
  const fs::path root = pipe.parent_path();
  CHECK(root.parent_path() == scene.tmp);
  CHECK(root.filename().string().starts_with("dlx-mps-77-"));
  struct stat info {};
  REQUIRE(::stat(root.c_str(), &info) == 0);
  CHECK((info.st_mode & 0777) == 0700);
  CHECK(fs::exists(pipe / "control"));
  const auto pid = daemon->daemon_pid();
  REQUIRE(pid);
  CHECK(alive(*pid));
  // The daemon got the task's GPUs as Slurm named them, and the two directories.
  CHECK(text_of(scene.record) == "start pipe=" + pipe.string() + " log=" + (root / "log").string() +
                                      " devices=4,7 mode=700\n");
  dlx::env::EnvMap client;
  daemon->add_client_environment(client);
  CHECK(client.at("CUDA_MPS_PIPE_DIRECTORY") == pipe.string());
  CHECK(client.at("CUDA_MPS_LOG_DIRECTORY") == (root / "log").string());

  daemon->stop();
  CHECK_THAT(text_of(scene.record), Catch::EndsWith("command quit pipe=" + pipe.string() + "\n"));
  CHECK_FALSE(alive(*pid));
  CHECK_FALSE(fs::exists(root));
  daemon->stop();  // idempotent
  daemon.reset();
  CHECK(scene.left_behind() == 0);
}

TEST_CASE("MPS: a daemon that ignores quit is killed by its pid", "[launch][mps]") {
  MpsScene scene(true, "stubborn");
  auto daemon = MpsDaemon::start(scene.task_env, short_waits());
  const auto pid = daemon->daemon_pid();
  REQUIRE(pid);
  const auto began = std::chrono::steady_clock::now();
  daemon.reset();  // the destructor stops it
  CHECK(std::chrono::steady_clock::now() - began >= std::chrono::milliseconds(1400));
  // SIGKILL: gone at once (reaped by init, which may take a moment).
  for (int i = 0; i < 100 && alive(*pid); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK_FALSE(alive(*pid));
  CHECK(scene.left_behind() == 0);
}

TEST_CASE("MPS: each way the daemon cannot start says why and leaves nothing", "[launch][mps]") {
  SECTION("no control program on the node") {
    MpsScene scene(false);
    CHECK_THROWS_WITH(MpsDaemon::start(scene.task_env, short_waits()),
                      "nvidia-cuda-mps-control is not on this node's PATH (the NVIDIA driver's utilities install it)");
    CHECK(scene.left_behind() == 0);
  }
  SECTION("the control program fails") {
    MpsScene scene(true, "fail");
    CHECK_THROWS_WITH(MpsDaemon::start(scene.task_env, short_waits()),
                      Catch::Contains("/stand_ins/nvidia-cuda-mps-control -d` exited 3; it said: stand-in: cannot start"));
    CHECK(scene.left_behind() == 0);
  }
  SECTION("the daemon makes no socket") {
    MpsScene scene(true, "silent");
    CHECK_THROWS_WITH(MpsDaemon::start(scene.task_env, short_waits()),
                      Catch::Contains("the MPS control daemon made no socket (") &&
                          Catch::Contains("/pipe/control) within 1.5 s; its log: (nothing)"));
    CHECK(scene.left_behind() == 0);
    CHECK_THAT(text_of(scene.record), Catch::Contains("command quit"));  // what had started was stopped
  }
}

TEST_CASE("MPS: the directory of a killed dlx-launch is removed by the next start, a running one's is kept",
          "[launch][mps]") {
  MpsScene scene(true);
  // A dlx-launch killed with SIGKILL while its daemon ran: a child process that starts one and
  // is killed. Its daemon (the stand-in's, in a session of its own) is ended by its pid after.
  int to_parent[2];
  REQUIRE(::pipe(to_parent) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::close(to_parent[0]);
    try {
      auto daemon = MpsDaemon::start(scene.task_env, short_waits());
      const auto line = daemon->pipe_directory().string() + " " + std::to_string(daemon->daemon_pid().value_or(0));
      if (::write(to_parent[1], line.data(), line.size()) < 0) ::_exit(2);
      daemon.release();  // never stopped: as if killed mid-run
    } catch (...) {
      ::_exit(3);
    }
    ::kill(::getpid(), SIGKILL);
  }
  ::close(to_parent[1]);
  std::string line(512, '\0');
  const auto got = ::read(to_parent[0], line.data(), line.size());
  ::close(to_parent[0]);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK((WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL));
  REQUIRE(got > 0);
  line.resize(static_cast<std::size_t>(got));
  const fs::path abandoned = fs::path(line.substr(0, line.find(' '))).parent_path();
  const auto orphan = static_cast<pid_t>(std::stol(line.substr(line.find(' ') + 1)));
  REQUIRE(fs::exists(abandoned / "owner.lock"));

  // Left alone: a directory being made (no owner.lock yet) and another user's name on a link.
  fs::create_directories(scene.tmp / "dlx-mps-78-making");
  fs::create_directory_symlink(abandoned, scene.tmp / "dlx-mps-79-link");

  REQUIRE(orphan > 1);
  REQUIRE(alive(orphan));  // the killed child's daemon, in a session of its own, outlived it
  auto running = MpsDaemon::start(scene.task_env, short_waits());
  CHECK_FALSE(fs::exists(abandoned));
  CHECK(fs::exists(scene.tmp / "dlx-mps-78-making"));
  CHECK(fs::is_symlink(scene.tmp / "dlx-mps-79-link"));
  // That daemon was asked to quit through its own pipe directory before the directory went (no
  // pid was killed: it may have been reused), and it has quit.
  CHECK_THAT(text_of(scene.record), Catch::Contains("command quit pipe=" + (abandoned / "pipe").string()));
  const bool quit = !alive(orphan);
  CHECK(quit);
  if (!quit) ::kill(orphan, SIGKILL);  // the test's own stand-in, so that nothing outlives it

  // A second start while the first daemon runs keeps the first one's directory.
  const auto first = running->pipe_directory().parent_path();
  auto second = MpsDaemon::start(scene.task_env, short_waits());
  CHECK(fs::exists(first / "pipe" / "control"));
  second.reset();
  running.reset();
  CHECK_FALSE(fs::exists(first));
  fs::remove(scene.tmp / "dlx-mps-79-link");
  fs::remove(scene.tmp / "dlx-mps-78-making");
  CHECK(scene.left_behind() == 0);
}

TEST_CASE("MPS: slots name their GPU as the daemon numbers the task's", "[launch][mps]") {
  dlx::launch::TaskTickets task{.task = 0, .tickets = {0, 2, 4, 6}, .progress = "/nonexistent", .at_once = 4,
                                .trials_per_gpu = 2, .mps = true};
  const dlx::env::EnvMap task_env{{"CUDA_VISIBLE_DEVICES", "4,7"}, {"DLX_TICKET", "0"}, {"DLX_TRIAL_ID", "0"}};
  CHECK(dlx::launch::slot_environment(task, task_env, 0, 1).at("CUDA_VISIBLE_DEVICES") == "7");  // no daemon
  task.gpus_as_mps_numbers = true;
  CHECK(dlx::launch::slot_environment(task, task_env, 0, 0).at("CUDA_VISIBLE_DEVICES") == "0");
  CHECK(dlx::launch::slot_environment(task, task_env, 0, 1).at("CUDA_VISIBLE_DEVICES") == "1");
  CHECK(dlx::launch::slot_environment(task, task_env, 0, 3).at("CUDA_VISIBLE_DEVICES") == "1");
  CHECK(dlx::launch::slot_environment(task, task_env, 0, 2).at("DLX_GPU_MEMORY_FRACTION") == "0.5");
}
