// SPDX-License-Identifier: Apache-2.0
// The crun back end: an OCI runtime (crun, else runc: crun refuses rootless containers on a
// host with cgroup v2 controllers in a hybrid hierarchy) on a bundle dlx writes into the run's
// private directory: config.json (oci_spec.hpp) and the root, a skeleton of the image
// (rootfs_skeleton.hpp). `<runtime> --root <private>/state run --bundle <bundle> <name>` stays in
// the foreground, forwards the signals it gets to the trainer and exits with its status. A trial
// with GPUs gets their device files and the node's driver files (nvidia_driver.hpp).
#include <unistd.h>

#include <fmt/format.h>

#include "backends.hpp"
#include "dlx/common/bounded_command.hpp"
#include "dlx/common/directories.hpp"
#include "dlx/common/durable_file.hpp"
#include "dlx/container/nvidia_driver.hpp"
#include "dlx/container/oci_spec.hpp"
#include "dlx/container/rootfs_skeleton.hpp"

namespace dlx::container::detail {

namespace {

namespace fs = std::filesystem;

void fresh_directory(const fs::path& directory) {
  std::error_code error;
  fs::remove_all(directory, error);  // a skeleton holds no mounts once its container is gone
  create_directories_with_mode(directory, 0700);
}

// Runs /bin/true (the host's, through its /usr) in a container of `program`: whether it works here.
std::optional<std::string> container_problem(const std::string& program) {
  char pattern[] = "/tmp/dlx-oci-probe-XXXXXX";
  const char* dir = ::mkdtemp(pattern);
  if (dir == nullptr) return "cannot make a directory in /tmp for a test container";
  const fs::path probe = dir;
  std::optional<std::string> problem;
  try {
    ContainerRun run;
    run.command = {"/usr/bin/true"};
    run.workdir = "/";
    run.env = {{"PATH", "/usr/bin:/bin"}};
    const auto skeleton = probe / "bundle" / "rootfs";
    create_directories_with_mode(skeleton, 0700);
    std::vector<Mount> binds{{"/usr", "/usr", true}};
    create_directories_with_mode(skeleton / "usr", 0700);
    mirror_host_tops(skeleton, binds, /*make_mount_points=*/true);
    for (const char* point : {"proc", "sys", "dev", "tmp", "etc/hosts", "etc/resolv.conf"}) {
      if (std::string_view(point).starts_with("etc/")) {
        create_directories_with_mode(skeleton / "etc", 0700);
        write_file_durably(skeleton / point, "", 0600);
      } else {
        create_directories_with_mode(skeleton / point, 0700);
      }
    }
    const auto spec = oci_spec(run, skeleton, binds, {::getuid(), ::getgid()}, {});
    write_file_durably(probe / "bundle" / "config.json", spec.dump(), 0600);
    const auto result = run_bounded({program, "--root", (probe / "state").string(), "run", "--bundle",
                                     (probe / "bundle").string(), fmt::format("dlx-probe-{}", ::getpid())},
                                    CommandLimits{.timeout = std::chrono::seconds(20)});
    if (result.exit_code != 0) {
      problem = fmt::format("{} cannot start a container here (exit {}): {}", fs::path(program).filename().string(),
                            result.exit_code, result.err.substr(0, 300));
    }
  } catch (const std::exception& e) {
    problem = e.what();
  }
  std::error_code ignored;
  fs::remove_all(probe, ignored);
  return problem;
}

class Oci final : public Runtime {
 public:
  std::string_view name() const override { return "crun"; }

  std::optional<std::string> unavailable(bool thorough) const override {
    const auto program = pick(thorough);
    if (!program) return why_none(thorough);
    return std::nullopt;
  }

  std::optional<std::string> refuses(const ImageRef& image) const override {
    if (image.kind == ImageRef::Kind::rootfs) return std::nullopt;
    return fmt::format("the crun runtime runs a root file system directory (or an OCI bundle), not {} (unpack it "
                       "once, e.g. `umoci raw unpack` or `podman export | tar -x`, or use the apptainer or podman "
                       "runtime)", to_string(image.kind));
  }

  bool needs_driver_files() const override { return true; }

  RuntimeCommand command(const ContainerRun& requested) const override {
    const auto program = pick(true);
    // The driver's libraries and nvidia-smi come with the GPUs, into /dlx/driver (the image has
    // a CUDA runtime but never the node's driver).
    ContainerRun run = requested;
    if (!run.driver.empty()) {  // dlx-launch finds them for a trial with GPUs
      run.mounts.insert(run.mounts.end(), run.driver.begin(), run.driver.end());
      add_driver_variables(run.env);
    }
    if (!program) throw ContainerError(*why_none(true));
    std::error_code absent;
    if (!fs::is_directory(run.image.rootfs(), absent)) {
      throw ContainerError(fmt::format("the image {} is no directory on this node", run.image.text));
    }
    const auto bundle = run.state_dir / "bundle";
    const auto skeleton = bundle / "rootfs";
    fresh_directory(bundle);
    create_directories_with_mode(skeleton, 0700);
    const auto devices = gpu_device_files(run.gpus);
    std::vector<SkeletonPoint> points{{"/proc"}, {"/sys"}, {"/dev"}, {"/tmp"}};
    for (const char* file : {"/etc/hosts", "/etc/resolv.conf"}) {
      if (::access(file, R_OK) == 0) points.push_back({file, true});
    }
    for (const auto& mount : run.mounts) {
      if (mount.container.string().rfind("/tmp/", 0) == 0 || mount.container.string().rfind("/dev/", 0) == 0) continue;
      points.push_back({mount.container, fs::is_regular_file(mount.host, absent)});
    }
    const auto binds = build_rootfs_skeleton(run.image.rootfs(), skeleton, points);
    const auto spec = oci_spec(run, skeleton, binds, {::getuid(), ::getgid()}, devices);
    write_file_durably(bundle / "config.json", spec.dump(1), 0600);
    // A container of this name left by an attempt that was killed (SIGKILL: no cleanup ran)
    // would make `run` fail: the name is the job's and rank's, the same on a requeue.
    try {
      run_bounded({*program, "--root", (run.state_dir / "state").string(), "delete", "--force", run.name},
                  CommandLimits{.timeout = std::chrono::seconds(20)});
    } catch (const std::exception&) {
    }
    // The runtime's own messages (runc's warnings about cgroups it cannot use rootless) go to a
    // file of the run's, not into the trial's log, whose last line names a crash's cause.
    const auto log = (run.state_dir / "runtime.log").string();
    const bool crun = fs::path(*program).filename() == "crun";
    return {{*program, crun ? "--log=file:" + log : "--log=" + log, "--root", (run.state_dir / "state").string(), "run",
             "--bundle", bundle.string(), run.name},
            {},
            {},
            {}};
  }

  void cleanup(const ContainerRun& run) const noexcept override {
    try {
      if (const auto program = pick(false)) {
        run_bounded({*program, "--root", (run.state_dir / "state").string(), "delete", "--force", run.name},
                    CommandLimits{.timeout = std::chrono::seconds(20)});
      }
    } catch (...) {
    }
  }

 private:
  // crun, else runc; with `thorough`, the first that starts a container here.
  std::optional<std::string> pick(bool thorough) const {
    for (const char* name : {"crun", "runc"}) {
      const auto program = find_program(name);
      if (!program) continue;
      if (!thorough) return program;
      if (chosen_ && *chosen_ == *program) return chosen_;
      if (auto problem = container_problem(*program)) {
        problems_.push_back(*problem);
        continue;
      }
      chosen_ = program;
      return program;
    }
    return std::nullopt;
  }

  std::optional<std::string> why_none(bool thorough) const {
    if (!thorough || problems_.empty()) return "neither crun nor runc is installed (not in PATH)";
    return fmt::format("{}", fmt::join(problems_, "; "));
  }

  mutable std::optional<std::string> chosen_;
  mutable std::vector<std::string> problems_;
};

}  // namespace

std::unique_ptr<Runtime> make_oci() { return std::make_unique<Oci>(); }

}  // namespace dlx::container::detail
