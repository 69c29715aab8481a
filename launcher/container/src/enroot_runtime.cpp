// SPDX-License-Identifier: Apache-2.0
// Enroot: a squashfs image is unpacked once into a container of the run's name (`enroot create`,
// in the user's ENROOT_DATA_PATH), then `enroot start` runs the command in it, sharing the host's
// namespaces but the mount and user ones; the mounts in enroot's fstab form (SRC DST none
// x-create=auto,rbind[,ro], colon-separated on the command line), GPUs through NVIDIA's hook and
// NVIDIA_VISIBLE_DEVICES. enroot start has no working-directory option: /bin/sh in the image
// changes to it.
//
// The trainer's variables go through a configuration script (`enroot start --conf`), whose
// environ() prints the run's private environment file, the way Enroot documents for such a
// script. Not `--env NAME` with the values in enroot's own environment: enroot would then run
// with the image's PATH, and it finds its own helpers (enroot-nsenter, enroot-switchroot) on
// PATH. Not `--env NAME=VALUE`: other users read argv.
#include <functional>

#include <fmt/format.h>

#include "backends.hpp"
#include "dlx/common/bounded_command.hpp"
#include "dlx/common/durable_file.hpp"

namespace dlx::container::detail {

namespace {

class Enroot final : public Runtime {
 public:
  std::string_view name() const override { return "enroot"; }

  std::optional<std::string> unavailable(bool) const override {
    const auto program = find_program("enroot");
    if (!program) return "enroot is not installed (not in PATH)";
    return version_problem({*program, "version"});  // enroot has no --version option
  }

  std::optional<std::string> refuses(const ImageRef& image) const override {
    switch (image.kind) {
      case ImageRef::Kind::squashfs:
      case ImageRef::Kind::registry:
        return std::nullopt;
      default:
        return fmt::format("enroot runs squashfs images and docker:// references, not {} (use the apptainer or "
                           "podman runtime, or `enroot import` it to a .sqsh file)", to_string(image.kind));
    }
  }

  RuntimeCommand command(const ContainerRun& run) const override {
    const auto program = find_program("enroot").value_or("enroot");
    auto image = run.image.path;
    if (run.image.kind == ImageRef::Kind::registry) {
      // docker://registry#name:tag is enroot's form; imported once into the user's containers
      // directory (beside the runs' own, which go when their run ends), named by the reference.
      image = run.state_dir.parent_path() / fmt::format("enroot-{:016x}.sqsh", std::hash<std::string>{}(run.image.text));
      std::error_code absent;
      if (run.force_pull || !std::filesystem::exists(image, absent)) {
        const auto ref = run.image.text.rfind("docker://", 0) == 0 ? run.image.text : "docker://" + run.image.text;
        std::filesystem::remove(image, absent);
        run_checked({program, "import", "--output", image.string(), ref}, "import the image", std::chrono::minutes(30));
      }
    }
    run_checked({program, "create", "--force", "--name", run.name, image.string()}, "unpack the image",
                std::chrono::minutes(10));
    auto env = run.env;
    if (!run.gpus.empty()) {
      std::string list;
      for (const int gpu : run.gpus) list += (list.empty() ? "" : ",") + std::to_string(gpu);
      env.emplace_back("NVIDIA_VISIBLE_DEVICES", list);  // NVIDIA's hook reads it from the environment file
    }
    write_env_file(run.state_dir, env);
    // BASH_SOURCE in a function names the file that defined it: no path to quote.
    write_file_durably(run.state_dir / "enroot.conf",
                       "# dlx: the trainer's variables, from the run's private environment file\n"
                       "environ() { cat \"$(dirname \"${BASH_SOURCE[0]}\")/container.env\"; }\n",
                       0600);
    RuntimeCommand command;
    // Not a login shell (enroot's default): that changes to $HOME first and fails where the image
    // has no such directory and no DEFAULT_HOME in its login.defs (Enroot 4.1.2, run here). The
    // trainer runs as under the other runtimes: from its working directory, no profile read.
    command.env.emplace_back("ENROOT_LOGIN_SHELL", "n");
    auto& argv = command.argv;
    argv = {program, "start", "--conf", (run.state_dir / "enroot.conf").string()};
    for (const auto& mount : run.mounts) {
      check_mount_path(mount.host, "enroot");
      check_mount_path(mount.container, "enroot");
      argv.emplace_back("--mount");
      argv.push_back(fmt::format("{}:{}:none:x-create=auto,rbind{}", mount.host.string(), mount.container.string(),
                                 mount.read_only ? ",ro" : ""));
    }
    argv.push_back(run.name);
    argv.insert(argv.end(), {"/bin/sh", "-c", "cd \"$0\" && exec \"$@\"", run.workdir.string()});
    argv.insert(argv.end(), run.command.begin(), run.command.end());
    return command;
  }

  void cleanup(const ContainerRun& run) const noexcept override {
    try {
      if (const auto program = find_program("enroot")) {
        run_bounded({*program, "remove", "--force", run.name}, CommandLimits{.timeout = std::chrono::minutes(2)});
      }
    } catch (...) {
    }
  }

 private:
  static void run_checked(const std::vector<std::string>& argv, std::string_view what, std::chrono::milliseconds limit) {
    const auto result = run_bounded(argv, CommandLimits{.timeout = limit});
    if (result.exit_code != 0) {
      throw ContainerError(fmt::format("enroot could not {} ({} exited {}): {}", what, fmt::join(argv, " "),
                                       result.exit_code, result.err.substr(0, 500)));
    }
  }
};

}  // namespace

std::unique_ptr<Runtime> make_enroot() { return std::make_unique<Enroot>(); }

}  // namespace dlx::container::detail
