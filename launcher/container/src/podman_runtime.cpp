// SPDX-License-Identifier: Apache-2.0
// Podman (rootless): `podman run` as root of the user namespace (the user; never the image's
// USER) in the host's network, PID and IPC namespaces, the variables
// from a private --env-file, the mounts as --volume, the GPUs through CDI (nvidia.com/gpu=N, where
// the site generated the NVIDIA CDI spec, which brings the driver too) or else as --device files
// with the node's driver files mounted by dlx (nvidia_driver.hpp), as for crun. Podman's own
// configuration (storage, OCI runtime, cgroup manager: containers.conf) is the site's and the
// user's.
#include <unistd.h>

#include <charconv>
#include <filesystem>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "backends.hpp"
#include "dlx/common/bounded_command.hpp"
#include "dlx/common/directories.hpp"
#include "dlx/container/nvidia_driver.hpp"
#include "dlx/container/rootfs_skeleton.hpp"

namespace dlx::container::detail {

namespace {

namespace fs = std::filesystem;

bool has_nvidia_cdi_spec() {
  for (const char* dir : {"/etc/cdi", "/var/run/cdi"}) {
    std::error_code error;
    for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
      if (it->path().filename().string().rfind("nvidia", 0) == 0) return true;
    }
  }
  return false;
}

class Podman final : public Runtime {
 public:
  std::string_view name() const override { return "podman"; }

  // Podman ends the OCI runtime's (runc's, crun's) own words with its error kinds and exits 127
  // or 126 (`podman run`'s documented codes):
  //   Error: runc: runc create failed: unable to start container process: exec: "pyhton3":
  //     executable file not found in $PATH: OCI runtime attempted to invoke a command that was not found
  //   Error: crun: open executable: Permission denied: OCI permission denied
  // The trainer's own exit 126 or 127 has no such line.
  bool could_not_run_program(int status, std::string_view last_line) const override {
    if (!last_line.starts_with("Error: ")) return false;
    if (status == 127) return last_line.ends_with("OCI runtime attempted to invoke a command that was not found");
    if (status == 126) return last_line.ends_with("OCI permission denied");
    return false;
  }
  // The OCI runtime (crun, runc) refused to create the container, in Podman's words, exit 126:
  // crun on a cgroup v1/v2 hybrid says
  //   Error: OCI runtime error: crun: cgroups in hybrid mode not supported, drop all controllers
  //     from cgroupv2
  // Podman's own errors (exit 125) stay crashes: among them a pull that failed, which may pass.
  bool could_not_start_container(int status, std::string_view last_line) const override {
    return status == 126 && last_line.starts_with("Error: OCI runtime error: ") &&
           !could_not_run_program(status, last_line);
  }

  std::optional<std::string> unavailable(bool thorough) const override {
    const auto program = find_program("podman");
    if (!program) return "podman is not installed (not in PATH)";
    if (!thorough) return version_problem({*program, "--version"});
    try {
      const auto info = run_bounded({*program, "info", "--format", "{{.Host.OCIRuntime.Name}}"},
                                    CommandLimits{.timeout = std::chrono::seconds(30)});
      if (info.exit_code != 0) return fmt::format("podman info failed: {}", info.err.substr(0, 300));
    } catch (const std::exception& e) {
      return e.what();
    }
    // Trials start Podman as their user; root's Podman differs (its own storage, configuration
    // and limits), so a start as root would answer for no trial (dlx doctor says so).
    if (::geteuid() == 0) return std::nullopt;
    return container_problem();
  }

  std::optional<std::string> refuses(const ImageRef& image) const override {
    switch (image.kind) {
      case ImageRef::Kind::sif:
        return "podman runs no SIF file (use the apptainer runtime, or an OCI archive of the image)";
      case ImageRef::Kind::squashfs:
        return "podman runs no squashfs image (use the enroot or apptainer runtime)";
      default:
        return std::nullopt;
    }
  }

  bool needs_driver_files() const override { return !has_nvidia_cdi_spec(); }

  RuntimeCommand command(const ContainerRun& requested) const override {
    // Without CDI the driver's libraries and nvidia-smi come with the GPUs, into /dlx/driver.
    ContainerRun run = requested;
    const bool cdi = has_nvidia_cdi_spec();
    if (!cdi && !run.driver.empty()) {  // dlx-launch finds them for a trial with GPUs
      run.mounts.insert(run.mounts.end(), run.driver.begin(), run.driver.end());
      add_driver_variables(run.env);
    }
    RuntimeCommand command;
    auto& argv = command.argv;
    argv = {find_program("podman").value_or("podman"), "run", "--rm", "--replace", "--name", run.name,
            "--network", "host", "--pid", "host", "--log-driver", "none",
            // Root of the rootless user namespace, which is the user outside, as the other
            // runtimes run the trainer: an image's USER (a uid the namespace does not map, or
            // maps to a subordinate one) could neither start nor write the working directory,
            // and what it wrote would not be the user's.
            "--user", "0:0",
            // The job's limits (Slurm propagates the submitter's), not podman's defaults.
            "--ulimit", "host"};
    // The host's IPC namespace, or (where the host has no /dev/mqueue for podman to bind) the
    // host's /dev/shm: NCCL's shared memory between the ranks of a node either way.
    if (::access("/dev/mqueue", F_OK) == 0) {
      argv.insert(argv.end(), {"--ipc", "host"});
    } else {
      argv.insert(argv.end(), {"--ipc", "private", "--volume", "/dev/shm:/dev/shm"});
    }
    argv.emplace_back("--env-file");
    argv.push_back(write_env_file(run.state_dir, run.env).string());
    // A root file system directory is shared and read-only to the user: podman runs a skeleton of
    // it (rootfs_skeleton.hpp) with the image's entries bound in, since its own overlay of a
    // --rootfs needs subordinate uids that a site may not give.
    std::vector<Mount> mounts = run.mounts;
    fs::path skeleton;
    if (run.image.kind == ImageRef::Kind::rootfs) {
      skeleton = run.state_dir / "rootfs";
      std::error_code ignored;
      fs::remove_all(skeleton, ignored);  // a skeleton holds no mounts once its container is gone
      create_directories_with_mode(skeleton, 0700);
      std::vector<SkeletonPoint> points{{"/proc"}, {"/sys"}, {"/dev"}, {"/tmp"}, {"/etc/hostname", true},
                                        {"/etc/hosts", true}, {"/etc/resolv.conf", true}, {"/run/.containerenv", true}};
      for (const auto& mount : run.mounts) {
        std::error_code absent;
        if (mount.container.string().rfind("/dev/", 0) != 0) {
          points.push_back({mount.container, fs::is_regular_file(mount.host, absent)});
        }
      }
      auto binds = build_rootfs_skeleton(run.image.rootfs(), skeleton, points);
      mounts.insert(mounts.begin(), binds.begin(), binds.end());
    }
    add_mount_options(argv, mounts, "--volume", "podman");
    argv.emplace_back("--workdir");
    argv.push_back(run.workdir.string());
    if (cdi) {
      for (const int gpu : run.gpus) argv.push_back(fmt::format("--device=nvidia.com/gpu={}", gpu));
    } else {
      for (const auto& device : gpu_device_files(run.gpus)) argv.push_back("--device=" + device);
    }
    if (run.force_pull && run.image.kind == ImageRef::Kind::registry) argv.emplace_back("--pull=always");
    switch (run.image.kind) {
      case ImageRef::Kind::rootfs:
        argv.emplace_back("--rootfs");
        argv.push_back(skeleton.string());
        break;
      case ImageRef::Kind::oci_layout:
      case ImageRef::Kind::oci_archive:
        argv.push_back(oci_transport(run.image));
        break;
      default:
        argv.push_back(run.image.text);
        break;
    }
    argv.insert(argv.end(), run.command.begin(), run.command.end());
    return command;
  }

  void pass_notice(const ContainerRun& run, int signal_number) const noexcept override {
    try {
      if (const auto program = find_program("podman")) {
        run_bounded({*program, "kill", "--signal", std::to_string(signal_number), run.name},
                    CommandLimits{.timeout = std::chrono::seconds(10), .max_output = 4096});
      }
    } catch (...) {
    }
  }

  std::optional<int> outliving_container_status(const ContainerRun& run) const noexcept override {
    // Only a container still running is waited for (one already gone, --rm removed it after an
    // ordinary end, or one never started, is not); `podman wait` prints its exit status once it
    // has exited. Bounded for a trainer that never ends: Slurm's kill comes long before, and
    // cleanup stops it then.
    try {
      const auto program = find_program("podman");
      if (!program) return std::nullopt;
      const auto state = run_bounded({*program, "container", "inspect", "--format", "{{.State.Running}}", run.name},
                                     CommandLimits{.timeout = std::chrono::seconds(30), .max_output = 4096});
      if (state.exit_code != 0 || state.out.rfind("true", 0) != 0) return std::nullopt;
      const auto waited = run_bounded({*program, "wait", run.name},
                                      CommandLimits{.timeout = std::chrono::minutes(30), .max_output = 4096});
      if (waited.exit_code != 0) return std::nullopt;
      int status = 0;
      const auto text = waited.out.substr(0, waited.out.find_last_not_of(" \n") + 1);
      const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), status);
      if (error != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
      return status;
    } catch (...) {
      return std::nullopt;
    }
  }

  void cleanup(const ContainerRun& run) const noexcept override {
    // --rm removes the container when podman run ends normally; one that was killed leaves it.
    try {
      if (const auto program = find_program("podman")) {
        run_bounded({*program, "rm", "--force", "--ignore", run.name}, CommandLimits{.timeout = std::chrono::seconds(30)});
      }
    } catch (...) {
    }
  }
 private:
  // Runs /usr/bin/true (the host's, through its /usr) in a container started as a trial's is
  // (command() on a root file system of links to the host's, its directories as read-only
  // volumes): `podman info` alone answers where no container can start, e.g. crun on a cgroup
  // v1/v2 hybrid ("cgroups in hybrid mode not supported"). The first start of a user's Podman
  // also makes its storage: up to a minute.
  std::optional<std::string> container_problem() const {
    char pattern[] = "/tmp/dlx-podman-probe-XXXXXX";
    const char* dir = ::mkdtemp(pattern);
    if (dir == nullptr) return "cannot make a directory in /tmp for a test container";
    const fs::path probe = dir;
    ContainerRun run;
    run.name = fmt::format("dlx-probe-{}", ::getpid());
    run.state_dir = probe / "state";
    run.command = {"/usr/bin/true"};
    run.workdir = "/";
    run.env = {{"PATH", "/usr/bin:/bin"}};
    std::optional<std::string> problem;
    try {
      create_directories_with_mode(run.state_dir, 0700);
      const auto image = probe / "image";
      create_directories_with_mode(image, 0700);
      run.mounts.push_back({"/usr", "/usr", true});
      mirror_host_tops(image, run.mounts, /*make_mount_points=*/false);
      run.image = classify_image(image.string());
      const auto command = this->command(run);
      const auto result = run_bounded(command.argv, CommandLimits{.timeout = std::chrono::seconds(90)});
      if (result.exit_code != 0) {
        const auto said = result.err.substr(0, result.err.find_last_not_of(" \n") + 1);
        problem = fmt::format("podman cannot start a container here (exit {}): {}", result.exit_code,
                              said.substr(0, 300));
      }
    } catch (const std::exception& e) {
      problem = fmt::format("podman cannot start a container here: {}", e.what());
    }
    cleanup(run);
    std::error_code ignored;
    fs::remove_all(probe, ignored);
    return problem;
  }
};

}  // namespace

std::unique_ptr<Runtime> make_podman() { return std::make_unique<Podman>(); }

}  // namespace dlx::container::detail
