// SPDX-License-Identifier: Apache-2.0
// Apptainer (or SingularityCE, whose CLI it keeps): `apptainer exec`, which shares the host's
// network, PID and IPC namespaces by default. --cleanenv, and the trainer's variables through
// APPTAINERENV_NAME (SINGULARITYENV_NAME) in apptainer's own environment, so that the image sees
// those and no other host variable (PATH, LD_LIBRARY_PATH of the host would break it), but HOME
// through --home; the mounts as --bind; --nv for GPUs (Slurm's cgroup and CUDA_VISIBLE_DEVICES keep the trial to its own).
#include <fmt/format.h>

#include "backends.hpp"

namespace dlx::container::detail {

namespace {

struct Program {
  std::string path;
  std::string env_prefix;  // APPTAINERENV_ or SINGULARITYENV_
};

std::optional<Program> find_apptainer() {
  if (auto path = find_program("apptainer")) return Program{*path, "APPTAINERENV_"};
  if (auto path = find_program("singularity")) return Program{*path, "SINGULARITYENV_"};
  return std::nullopt;
}

class Apptainer final : public Runtime {
 public:
  std::string_view name() const override { return "apptainer"; }

  std::optional<std::string> unavailable(bool) const override {
    const auto program = find_apptainer();
    if (!program) return "apptainer is not installed (neither apptainer nor singularity in PATH)";
    return version_problem({program->path, "--version"});
  }

  std::optional<std::string> refuses(const ImageRef&) const override { return std::nullopt; }  // runs every kind

  RuntimeCommand command(const ContainerRun& run) const override {
    const auto program = find_apptainer().value_or(Program{"apptainer", "APPTAINERENV_"});
    RuntimeCommand command;
    auto& argv = command.argv;
    argv = {program.path, "exec", "--cleanenv", "--no-home"};
    for (const auto& [name, value] : run.env) {
      if (name != "HOME") continue;
      // Apptainer sets HOME itself and ignores APPTAINERENV_HOME (with a warning); --home sets it,
      // and with --no-home mounts nothing there, as the other runtimes do.
      check_mount_path(value, "apptainer");
      argv.emplace_back("--home");
      argv.push_back(value);
    }
    add_mount_options(argv, run.mounts, "--bind", "apptainer");
    argv.emplace_back("--pwd");
    argv.push_back(run.workdir.string());
    if (!run.gpus.empty()) argv.emplace_back("--nv");
    for (const auto& [name, value] : run.env) {
      if (name != "HOME") command.env.emplace_back(program.env_prefix + name, value);
    }
    switch (run.image.kind) {
      case ImageRef::Kind::oci_layout:
      case ImageRef::Kind::oci_archive:
        argv.push_back(oci_transport(run.image));
        break;
      case ImageRef::Kind::registry:
        argv.push_back(run.image.text.rfind("docker://", 0) == 0 ? run.image.text : "docker://" + run.image.text);
        break;
      case ImageRef::Kind::rootfs:
        argv.push_back(run.image.rootfs().string());  // a sandbox directory
        break;
      default:
        argv.push_back(run.image.path.string());
        break;
    }
    argv.insert(argv.end(), run.command.begin(), run.command.end());
    return command;
  }
};

}  // namespace

std::unique_ptr<Runtime> make_apptainer() { return std::make_unique<Apptainer>(); }

}  // namespace dlx::container::detail
