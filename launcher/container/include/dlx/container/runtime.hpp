// SPDX-License-Identifier: Apache-2.0
#pragma once
// One interface, one small back end per container runtime (docs/containers.md, admin guide):
//
//   apptainer  apptainer (or singularity) exec: SIF, squashfs, sandbox directories, docker://,
//              oci-archive:, oci:  (--nv for GPUs)
//   podman     podman run: registry references, oci-archive:, oci:, a root file system directory
//              (--rootfs); CDI or --device for GPUs
//   enroot     enroot create + start: squashfs files; docker:// imported first (NVIDIA's hooks
//              for GPUs, through NVIDIA_VISIBLE_DEVICES)
//   crun       an OCI runtime (crun, else runc) on a bundle dlx writes: a root file system
//              directory or bundle
//
// Every back end runs the trainer as the user (rootless: no setuid helper of dlx's), in the host's
// network and PID namespaces (NCCL/gloo rendezvous; signals and the system sampler reach the
// trainer as outside), with the trial's directories mounted at the same paths.
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dlx/common/error.hpp"
#include "dlx/container/container_run.hpp"

namespace dlx::container {

class ContainerError : public Error {
 public:
  using Error::Error;
};

class Runtime {
 public:
  virtual ~Runtime() = default;
  virtual std::string_view name() const = 0;
  // nullopt when the runtime is installed and runs here; else why not. `thorough` also starts a
  // container (dlx doctor; crun's choice between crun and runc), else the program's --version.
  virtual std::optional<std::string> unavailable(bool thorough) const = 0;
  // nullopt when this runtime runs such an image; else what to do instead.
  virtual std::optional<std::string> refuses(const ImageRef& image) const = 0;
  // The command that runs `run` (it may write its bundle or environment file into run.state_dir).
  // Throws ContainerError when the image cannot be run (a missing file, say).
  virtual RuntimeCommand command(const ContainerRun& run) const = 0;
  // Whether a container of this back end with GPUs needs dlx to bring the node's NVIDIA driver
  // files in (ContainerRun::driver): true where the runtime brings only the device files (crun;
  // podman on a node without NVIDIA's CDI spec), false where it brings the driver itself
  // (apptainer --nv, enroot's hooks, podman's CDI devices).
  virtual bool needs_driver_files() const { return false; }
  // Whether the runtime's exit `status` with `last_line` (the last error line of the run) says
  // that it could not start the trainer's program in the image at all (not found, not
  // executable): the image and the command are the same at a restart, so it would fail alike.
  // False where the runtime does not say so in words of its own (the trainer's own failure).
  virtual bool could_not_run_program(int status, std::string_view last_line) const {
    (void)status;
    (void)last_line;
    return false;
  }
  // Whether the exit `status` with `last_line` is the runtime's own failure to start a container
  // on this node at all (its cgroups, storage or configuration; not the program, not the
  // trainer): a restart on the node meets it again. False where the runtime does not say so in
  // words of its own.
  virtual bool could_not_start_container(int status, std::string_view last_line) const {
    (void)status;
    (void)last_line;
    return false;
  }
  // A notice dlx-launch got (SIGTERM, SIGUSR1, SIGUSR2), passed to the container's trainer by the
  // runtime's own command, beside what the runtime's process passes on itself. Podman's signal
  // proxy runs a helper (runc kill) per signal, and Slurm's signal to every process of the step
  // kills the helper of the SIGCONT it sends first: the SIGTERM of a requeue was seen never to
  // reach the trainer. Never throws.
  virtual void pass_notice(const ContainerRun& run, int signal_number) const noexcept {
    (void)run;
    (void)signal_number;
  }
  // After the runtime's process exited by itself, before cleanup: the exit status of a container
  // that outlived it, waited for; nullopt where the container ended with it (or this back end's
  // process is the container's). Podman's `podman run` exits 0 at once on a SIGTERM, which it
  // passes on to the container: at a requeue or a preemption the trainer is then still saving
  // its checkpoint, and its exit status (85) is the trial's. Never throws.
  virtual std::optional<int> outliving_container_status(const ContainerRun& run) const noexcept {
    (void)run;
    return std::nullopt;
  }
  // After the runtime's process exited: what it leaves behind is removed. Never throws.
  virtual void cleanup(const ContainerRun& run) const noexcept;
};

inline constexpr std::string_view kAutoOrder[] = {"apptainer", "podman", "enroot", "crun"};

// The back end of that name (apptainer, podman, enroot, crun); throws ContainerError otherwise.
std::unique_ptr<Runtime> make_runtime(std::string_view name);

// The runtime for `image`: the configured one, which must be available and run the image, or
// with "auto" the first in kAutoOrder that does. Throws ContainerError saying what was tried.
std::unique_ptr<Runtime> choose_runtime(std::string_view configured, const ImageRef& image);

// The program of a runtime, looked up in PATH; nullopt when absent.
std::optional<std::string> find_program(std::string_view name);

}  // namespace dlx::container
