// SPDX-License-Identifier: Apache-2.0
#include "dlx/launch/mps_daemon.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "dlx/common/unique_fd.hpp"
#include "dlx/container/runtime.hpp"
#include "dlx/launch/launch_error.hpp"

namespace dlx::launch {

namespace fs = std::filesystem;

namespace {

constexpr const char* kPidFile = "nvidia-cuda-mps-control.pid";
constexpr const char* kOwnerLock = "owner.lock";
constexpr auto kMpsPoll = std::chrono::milliseconds(20);

double seconds(std::chrono::milliseconds wait) { return std::chrono::duration<double>(wait).count(); }

std::vector<std::string> environment_lines(const env::EnvMap& env) {
  std::vector<std::string> lines;
  for (const auto& [name, value] : env) lines.push_back(name + "=" + value);
  return lines;
}

// Runs `program args...` in a process group of its own with `env`, standard input from `input`
// (a file), standard output and error appended to `output`. Waits up to `limit` for it to exit;
// past that its group is killed. The exit status, or nullopt when it had to be killed.
std::optional<int> run_control(const std::string& program, const std::vector<std::string>& args,
                               const env::EnvMap& env, const fs::path& input, const fs::path& output,
                               std::chrono::milliseconds limit) {
  std::vector<std::string> argv{program};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> arg_pointers;
  for (auto& arg : argv) arg_pointers.push_back(arg.data());
  arg_pointers.push_back(nullptr);
  auto lines = environment_lines(env);
  std::vector<char*> env_pointers;
  for (auto& line : lines) env_pointers.push_back(line.data());
  env_pointers.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, input.c_str(), O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, output.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setpgroup(&attributes, 0);
  sigset_t none;
  sigemptyset(&none);
  sigset_t defaults;
  sigfillset(&defaults);
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setsigdefault(&attributes, &defaults);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t child = 0;
  const int error = ::posix_spawn(&child, program.c_str(), &actions, &attributes, arg_pointers.data(),
                                  env_pointers.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (error != 0) throw LaunchError(fmt::format("cannot run {}: {}", program, std::strerror(error)));

  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    int status = 0;
    const pid_t done = ::waitpid(child, &status, WNOHANG);
    if (done == child) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (done < 0 && errno != EINTR) return std::nullopt;
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(-child, SIGKILL);
      while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
      }
      return std::nullopt;
    }
    std::this_thread::sleep_for(kMpsPoll);
  }
}

// The last lines of a log, for a message.
std::string tail_of(const fs::path& path, std::size_t bytes = 2000) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream all;
  all << in.rdbuf();
  std::string text = all.str();
  if (text.size() > bytes) text = "..." + text.substr(text.size() - bytes);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text.empty() ? "(nothing)" : text;
}

// Whether `pid` is gone: no such process, or a zombie waiting for its parent.
// The daemon's pid from its pid file in `pipe`, while it is there.
std::optional<pid_t> read_daemon_pid(const fs::path& pipe) {
  std::ifstream in(pipe / kPidFile);
  std::string text;
  if (!std::getline(in, text)) return std::nullopt;
  pid_t pid = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), pid);
  if (error != std::errc() || pid <= 1) return std::nullopt;
  return pid;
}

bool process_gone(pid_t pid) {
  if (::kill(pid, 0) != 0) return errno == ESRCH;
  std::ifstream stat(fmt::format("/proc/{}/stat", pid));
  std::string line;
  std::getline(stat, line);
  const auto close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z';
}

}  // namespace

MpsDaemon::MpsDaemon(fs::path root, env::EnvMap control_env, Waits waits)
    : root_(std::move(root)), pipe_(root_ / "pipe"), log_(root_ / "log"),
      control_env_(std::move(control_env)), waits_(waits) {}

std::unique_ptr<MpsDaemon> MpsDaemon::start(const env::EnvMap& task_env, Waits waits) {
  const auto program = container::find_program(kControlProgram);
  if (!program) {
    throw LaunchError(fmt::format("{} is not on this node's PATH (the NVIDIA driver's utilities install it)",
                                  kControlProgram));
  }
  const std::string tmp = env::lookup(task_env, "TMPDIR").value_or("/tmp");
  const std::string job = env::lookup(task_env, "SLURM_JOB_ID").value_or("nojob");
  const fs::path parent = tmp.empty() ? "/tmp" : tmp;
  remove_abandoned(parent, *program, task_env, waits);
  std::string pattern = fmt::format("{}/dlx-mps-{}-XXXXXX", parent.string(), job);
  if (::mkdtemp(pattern.data()) == nullptr) {
    throw LaunchError(fmt::format("cannot make a directory for MPS in {}: {}", tmp, std::strerror(errno)));
  }
  env::EnvMap control_env = task_env;
  auto daemon = std::unique_ptr<MpsDaemon>(new MpsDaemon(pattern, control_env, waits));
  std::error_code ignored;
  const auto fail_setup = [&](const fs::path& what, int error) {
    daemon->stopped_ = true;
    fs::remove_all(daemon->root_, ignored);
    return LaunchError(fmt::format("cannot make {}: {}", what.string(), std::strerror(error)));
  };
  if (::mkdir(daemon->pipe_.c_str(), 0700) != 0 || ::mkdir(daemon->log_.c_str(), 0700) != 0) {
    throw fail_setup(daemon->pipe_, errno);
  }
  // owner.lock appears locked (step 4): locked under a temporary name, then renamed.
  const auto lock_path = daemon->root_ / kOwnerLock;
  const auto new_lock = daemon->root_ / (std::string(kOwnerLock) + ".new");
  UniqueFd lock_fd(::open(new_lock.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!lock_fd) throw fail_setup(new_lock, errno);
  daemon->owner_ = FileLock(std::move(lock_fd), lock_path, LockOwner::description);
  try {
    daemon->owner_.lock(LockMode::exclusive);  // a new file: granted at once
  } catch (const std::exception& error) {
    daemon->stopped_ = true;
    fs::remove_all(daemon->root_, ignored);
    throw LaunchError(fmt::format("cannot lock {}: {}", new_lock.string(), error.what()));
  }
  if (::rename(new_lock.c_str(), lock_path.c_str()) != 0) throw fail_setup(lock_path, errno);
  daemon->control_env_["CUDA_MPS_PIPE_DIRECTORY"] = daemon->pipe_.string();
  daemon->control_env_["CUDA_MPS_LOG_DIRECTORY"] = daemon->log_.string();
  const fs::path started = daemon->log_ / "dlx-start.out";
  const auto give_up = [&](const std::string& why) {
    daemon->stop();  // whatever did start goes, and the directory with it
    return LaunchError(why);
  };
  const auto status = run_control(*program, {"-d"}, daemon->control_env_, "/dev/null", started, waits.start);
  if (status != 0) {
    const std::string said = tail_of(started);
    throw give_up(fmt::format("`{} -d` {}; it said: {}", *program,
                              status ? fmt::format("exited {}", *status)
                                     : fmt::format("did not return within {} s", seconds(waits.start)),
                              said));
  }
  const auto deadline = std::chrono::steady_clock::now() + waits.start;
  while (!fs::exists(daemon->pipe_ / "control", ignored)) {
    if (std::chrono::steady_clock::now() >= deadline) {
      const std::string said = tail_of(daemon->log_ / "control.log");
      throw give_up(fmt::format("the MPS control daemon made no socket ({}/control) within {} s; its log: {}",
                                daemon->pipe_.string(), seconds(waits.start), said));
    }
    std::this_thread::sleep_for(kMpsPoll);
  }
  return daemon;
}

std::unique_ptr<MpsDaemon> MpsDaemon::start(const env::EnvMap& task_env) { return start(task_env, Waits{}); }

std::optional<int> MpsDaemon::ask_to_quit(const std::string& program, env::EnvMap control_env,
                                          const fs::path& root, std::chrono::milliseconds limit) {
  const fs::path pipe = root / "pipe", log = root / "log", quit = root / "quit";
  control_env["CUDA_MPS_PIPE_DIRECTORY"] = pipe.string();
  control_env["CUDA_MPS_LOG_DIRECTORY"] = log.string();
  {
    // The control program's standard input; the directory is this user's own (mode 0700).
    UniqueFd input(::open(quit.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!input || ::write(input.get(), "quit\n", 5) != 5) {
      throw LaunchError(fmt::format("cannot write {}: {}", quit.string(), std::strerror(errno)));
    }
  }
  const auto pid = read_daemon_pid(pipe);  // before the quit: the daemon removes its files
  const auto status = run_control(program, {}, control_env, quit, log / "dlx-quit.out", limit);
  if (status == 0 && pid) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!process_gone(*pid) && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(kMpsPoll);
  }
  return status;
}

void MpsDaemon::remove_abandoned(const fs::path& tmp, const std::string& program,
                                 const env::EnvMap& task_env, Waits waits) noexcept {
  try {
    std::error_code error;
    for (const auto& entry : fs::directory_iterator(tmp, error)) {
      const auto& dir = entry.path();
      if (!dir.filename().string().starts_with("dlx-mps-")) continue;
      struct stat info {};
      // Only this user's own directories, never through a link (/tmp is everyone's).
      if (::lstat(dir.c_str(), &info) != 0 || !S_ISDIR(info.st_mode) || info.st_uid != ::geteuid()) continue;
      const auto lock_path = dir / kOwnerLock;
      UniqueFd fd(::open(lock_path.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC));
      if (!fd) continue;  // being made, or not ours to judge
      FileLock owner(std::move(fd), lock_path, LockOwner::description);
      if (!owner.try_lock(LockMode::exclusive)) continue;  // its dlx-launch runs
      std::string daemon;
      std::error_code ignored;
      if (fs::exists(dir / "pipe" / "control", ignored)) {
        const auto status = ask_to_quit(program, task_env, dir, waits.stop);
        daemon = status == 0 ? "; its daemon was asked to quit"
                             : fmt::format("; its daemon did not take \"quit\" ({})",
                                           status ? fmt::format("the control program exited {}", *status)
                                                  : std::string("the control program did not return in time"));
      }
      std::error_code removed;
      fs::remove_all(dir, removed);
      std::fprintf(stderr, "dlx-launch: MPS: removed %s, which a killed dlx-launch left behind%s%s\n", dir.c_str(),
                   daemon.c_str(), removed ? fmt::format(" (not all of it: {})", removed.message()).c_str() : "");
    }
  } catch (const std::exception& error) {
    std::fprintf(stderr, "dlx-launch: MPS: looking for abandoned directories in %s: %s\n", tmp.c_str(), error.what());
  }
}

MpsDaemon::~MpsDaemon() { stop(); }

std::optional<pid_t> MpsDaemon::daemon_pid() const { return read_daemon_pid(pipe_); }

void MpsDaemon::stop() noexcept {
  if (stopped_) return;
  stopped_ = true;
  try {
    const auto pid = daemon_pid();
    if (const auto program = container::find_program(kControlProgram); program && pid) {
      const auto status = ask_to_quit(*program, control_env_, root_, waits_.stop);
      if (status != 0) {
        std::fprintf(stderr, "dlx-launch: MPS: `%s` with \"quit\" %s\n", program->c_str(),
                     status ? fmt::format("exited {}", *status).c_str() : "did not return in time");
      }
    }
    if (pid) {
      const auto deadline = std::chrono::steady_clock::now() + waits_.stop;
      while (!process_gone(*pid) && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(kMpsPoll);
      if (!process_gone(*pid)) {
        std::fprintf(stderr, "dlx-launch: MPS: the control daemon (pid %d) did not quit within %g s: killed\n",
                     static_cast<int>(*pid), seconds(waits_.stop));
        ::kill(*pid, SIGKILL);
      }
    }
  } catch (const std::exception& error) {
    std::fprintf(stderr, "dlx-launch: MPS: stopping the daemon: %s\n", error.what());
  }
  std::error_code ignored;
  fs::remove_all(root_, ignored);
}

void MpsDaemon::add_client_environment(env::EnvMap& client_env) const {
  client_env["CUDA_MPS_PIPE_DIRECTORY"] = pipe_.string();
  client_env["CUDA_MPS_LOG_DIRECTORY"] = log_.string();
}

}  // namespace dlx::launch
