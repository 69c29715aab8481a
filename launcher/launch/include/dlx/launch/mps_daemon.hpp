// SPDX-License-Identifier: Apache-2.0
#pragma once
// CUDA MPS for a packed task (resources.mps, which the site must allow: config/site.hpp). MPS
// lets the kernels of the task's trials run on a GPU at once instead of in time slices. The
// protocol, in the task's dlx-launch (the parent of its slots), as the job's user:
//   1. start: a directory of its own, mode 0700, made by mkdtemp in the node's temporary
//      directory ($TMPDIR, else /tmp): dlx-mps-<job>-XXXXXX, holding pipe/ and log/. The control
//      socket lives in pipe/, and its path must stay short (sockaddr_un: 108 bytes). The control
//      program `nvidia-cuda-mps-control -d` runs there with CUDA_MPS_PIPE_DIRECTORY,
//      CUDA_MPS_LOG_DIRECTORY and the task's CUDA_VISIBLE_DEVICES; it forks the daemon and exits.
//      dlx-launch then waits (kStartWait) for pipe/control, the daemon's socket. Nothing another
//      user can write is used: the directory is new and private, and only its own files are read.
//   2. clients: each slot gets CUDA_MPS_PIPE_DIRECTORY and CUDA_MPS_LOG_DIRECTORY, and its GPU as
//      the daemon numbers the task's GPUs (0 to G-1). MPS renumbers the devices it was started
//      with, so a client naming the node's index would fail.
//   3. stop, once every slot has ended (also on an exception, from the destructor): "quit" on
//      the control program's standard input, with the same pipe directory. Then wait
//      (kStopWait) for the daemon's process (its pid in pipe/nvidia-cuda-mps-control.pid) to be
//      gone, else SIGKILL that pid. The directory is removed.
//   4. abandoned directories: a dlx-launch killed with SIGKILL (the OOM killer, Slurm past
//      KillWait) cannot remove its directory. So each directory holds owner.lock, locked
//      (an open-file-description lock) by its dlx-launch for the daemon's whole life; the lock is
//      taken on owner.lock.new, which is then renamed, so a visible owner.lock is always locked
//      while its owner lives. start first removes this user's dlx-mps-* directories in the same
//      temporary directory whose owner.lock it can lock at once: their owners are gone. Their
//      daemon may not be (it runs in a session of its own): where pipe/control exists, "quit"
//      goes to it through the control program with that pipe directory, as in step 3, and start
//      waits (kStopWait) for its pid to be gone, but never kills that pid, which may have been
//      reused since; then the directory is removed. A daemon that outlived its directory could
//      no longer be reached at all. A directory without owner.lock (one being made, or made by
//      an older dlx) is left alone.
// MPS that cannot start (no control program on the node, a daemon that never answers) is not a
// failure of the task: dlx-launch says why on stderr, and the trials share the GPUs in turns.
#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <sys/types.h>

#include "dlx/common/file_lock.hpp"
#include "dlx/env/environment.hpp"

namespace dlx::launch {

class MpsDaemon {
 public:
  static constexpr std::chrono::seconds kStartWait{10};
  static constexpr std::chrono::seconds kStopWait{10};
  static constexpr const char* kControlProgram = "nvidia-cuda-mps-control";

  struct Waits {
    std::chrono::milliseconds start = kStartWait;
    std::chrono::milliseconds stop = kStopWait;
  };

  // Starts the daemon for a task whose environment is `task_env` (PATH, TMPDIR,
  // CUDA_VISIBLE_DEVICES, SLURM_JOB_ID are read). Throws LaunchError saying why it did not come
  // up, with the end of its log; nothing is left behind then.
  static std::unique_ptr<MpsDaemon> start(const env::EnvMap& task_env, Waits waits);
  static std::unique_ptr<MpsDaemon> start(const env::EnvMap& task_env);  // the default waits
  ~MpsDaemon();
  MpsDaemon(const MpsDaemon&) = delete;
  MpsDaemon& operator=(const MpsDaemon&) = delete;

  // Stops the daemon and removes the directory (idempotent; never throws: problems go to stderr).
  void stop() noexcept;
  // The variables a client needs to find the daemon (CUDA_MPS_PIPE_DIRECTORY,
  // CUDA_MPS_LOG_DIRECTORY). Its CUDA_VISIBLE_DEVICES is the slot's (task_slots.hpp).
  void add_client_environment(env::EnvMap& client_env) const;

  const std::filesystem::path& pipe_directory() const noexcept { return pipe_; }
  std::optional<pid_t> daemon_pid() const;  // from the pid file, while it is there

 private:
  MpsDaemon(std::filesystem::path root, env::EnvMap control_env, Waits waits);

  // Removes this user's abandoned MPS directories in `tmp`, their daemons asked to quit first
  // through `program` (step 4); says each on stderr.
  static void remove_abandoned(const std::filesystem::path& tmp, const std::string& program,
                               const env::EnvMap& task_env, Waits waits) noexcept;
  // "quit" through the control program, with `control_env` and the pipe and log directories of
  // the MPS directory `root`, then up to `limit` for the daemon's pid to be gone; the control
  // program's status (nullopt: it had to be killed).
  static std::optional<int> ask_to_quit(const std::string& program, env::EnvMap control_env,
                                        const std::filesystem::path& root,
                                        std::chrono::milliseconds limit);

  std::filesystem::path root_, pipe_, log_;
  FileLock owner_;  // owner.lock, held while this object lives (step 4)
  env::EnvMap control_env_;  // the control program's environment
  Waits waits_;
  bool stopped_ = false;
};

}  // namespace dlx::launch
