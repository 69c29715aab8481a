// SPDX-License-Identifier: Apache-2.0
// dlx doctor: are this cluster's Slurm settings what dlx needs? Reads Slurm's own reports (or
// saved copies of them, for a host without the client) and prints one verdict per setting.
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "container_checks.hpp"
#include "gpu_checks.hpp"
#include "dlx/launch/gpu_usage.hpp"
#include "dlx/launch/launch_env.hpp"
#include "dlx/container/nvidia_driver.hpp"
#include "dlx/container/runtime.hpp"
#include "options.hpp"
#include "plugstack_files.hpp"
#include "site_checks.hpp"

namespace dlx::cli {

namespace po = boost::program_options;

namespace {

// stdout of a command; nullopt when it could not run or failed.
std::optional<std::string> command_output(const std::string& command) {
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen(command.c_str(), "r"), ::pclose);
  if (!pipe) return std::nullopt;
  std::string output;
  std::array<char, 4096> buffer{};
  while (std::fgets(buffer.data(), static_cast<int>(buffer.size()), pipe.get())) output += buffer.data();
  const int status = ::pclose(pipe.release());
  if (status != 0) return std::nullopt;
  return output;
}

std::string read_file(const std::string& path, const char* option) {
  std::ifstream file(path);
  if (!file) throw UsageError(fmt::format("{}: cannot read '{}'", option, path));
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

doctor::SiteFacts gather_facts(const po::variables_map& options) {
  doctor::SiteFacts facts;
  std::string config_report;
  if (options.count("config")) {
    config_report = read_file(options["config"].as<std::string>(), "--config");
  } else {
    auto report = command_output("scontrol show config 2>/dev/null");
    if (!report) {
      throw Error("`scontrol show config` failed: is the Slurm client installed and slurmctld reachable from "
                  "here (SLURM_CONF)? Or give saved reports with --config FILE [--partitions FILE]");
    }
    config_report = *report;
  }
  facts.config = doctor::parse_scontrol_config(config_report);
  if (facts.config.empty()) throw Error("no `Key = value` lines in the configuration report: is it `scontrol show config`?");
  if (options.count("partitions")) {
    facts.partitions = doctor::parse_partitions(read_file(options["partitions"].as<std::string>(), "--partitions"));
  } else if (!options.count("config")) {
    if (auto report = command_output("scontrol show partition -o 2>/dev/null")) facts.partitions = doctor::parse_partitions(*report);
  }
  if (!options.count("config")) facts.mpi_plugins = command_output("srun --mpi=list 2>&1");
  if (auto path = facts.config.find("PlugStackConfig"); path != facts.config.end()) {
    // The file with dlx's line, following the plugstack.conf's include lines.
    facts.plugstack_path = path->second;
    if (auto file = doctor::plugstack_file_with_dlx(path->second)) {
      facts.plugstack_path = file->path;
      facts.plugstack_text = file->text;
    }
  }
  return facts;
}

std::vector<doctor::Finding> container_findings() {
  auto findings = doctor::check_container_runtimes([](std::string_view runtime) -> std::optional<std::string> {
    try {
      return container::make_runtime(runtime)->unavailable(/*thorough=*/true);
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
  });
  // Podman's start is tried only as a user (podman_runtime.cpp): as root, say where to ask.
  const bool podman_answered = std::ranges::any_of(findings, [](const auto& f) {
    return f.verdict == doctor::Verdict::ok && f.check == "container runtime podman";
  });
  if (podman_answered && ::geteuid() == 0) {
    findings.push_back({doctor::Verdict::skipped, "a user's Podman container",
                        "dlx doctor runs as root and trials start Podman as their user, with their own storage and "
                        "limits: run `dlx doctor --containers` as a user (on a node: srun -N1 dlx doctor "
                        "--containers) to start one as trials do",
                        ""});
  }
  // Where a runtime works, which SDK its trials get: dlx-launch's choice, from this same prefix.
  const bool any = std::ranges::any_of(findings, [](const auto& f) { return f.verdict == doctor::Verdict::ok; });
  std::error_code no_exe;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", no_exe);
  if (any && !no_exe) {
    const auto library = launch::dlx_library_file(self);
    findings.push_back(doctor::check_container_sdk(library, library && launch::is_portable_library(*library)));
  }
  // The runtimes that run here and take the driver's files from dlx (crun; podman without CDI).
  std::vector<std::string> taking_driver;
  for (const char* runtime : {"crun", "podman"}) {
    const bool works = std::ranges::any_of(findings, [&](const auto& f) {
      return f.verdict == doctor::Verdict::ok && f.check == fmt::format("container runtime {}", runtime);
    });
    if (works && container::make_runtime(runtime)->needs_driver_files()) taking_driver.emplace_back(runtime);
  }
  if (!taking_driver.empty()) {
    std::error_code absent;
    std::vector<std::pair<std::filesystem::path, std::filesystem::path>> driver;
    const bool gpus_here = std::filesystem::exists("/dev/nvidiactl", absent);
    if (gpus_here) {
      for (const auto& file : container::find_driver_files()) driver.emplace_back(file.host, file.container);
    }
    findings.push_back(doctor::check_container_driver(gpus_here, taking_driver, driver));
  }
  return findings;
}

std::vector<doctor::Finding> gpu_findings() {
  const auto host = launch::gpu_host_facts();
  return doctor::check_gpu_metrics({host.why_not, host.uuids, host.utilization_samples, host.process_utilization,
                                    host.process_list});
}

CommandLine doctor_command_line() {
  CommandLine command("doctor", "[--json] [--config FILE [--partitions FILE]] [--containers] [--gpus]",
                      "Checks this cluster's Slurm settings for dlx: requeue, preemption, the SPANK\n"
                      "plugin in plugstack.conf, MPI. It reads Slurm's own reports (`scontrol show\n"
                      "config` and `scontrol show partition`), or saved copies of them, and prints one\n"
                      "verdict per setting with what to change (docs/admin-guide.md). Any user can run\n"
                      "it on a submit host. It also says which container runtimes start a container\n"
                      "on this host (--containers: only that; run it on a node with srun) and what the\n"
                      "system metrics can read of its GPUs (--gpus: only that).\n"
                      "Exit status 1 when a setting fails.",
                      "dlx doctor\n"
                      "dlx doctor --config config.txt --partitions partitions.txt\n"
                      "srun -N1 dlx doctor --containers\n"
                      "srun -N1 --gpus=1 dlx doctor --gpus");
  command.options.add_options()
      ("json", "print the findings as JSON")
      ("config", po::value<std::string>()->value_name("FILE"),
       "a saved `scontrol show config` instead of asking slurmctld")
      ("partitions", po::value<std::string>()->value_name("FILE"), "a saved `scontrol show partition -o`")
      ("containers", "only the container runtimes of this host (apptainer, podman, enroot, crun)")
      ("gpus", "only what the system metrics can read of this host's GPUs (NVML)");
  return command;
}

}  // namespace

int run_doctor(const Arguments& arguments) {
  const auto command = doctor_command_line();
  const auto options = parse_options(arguments, command);
  if (options.count("partitions") && !options.count("config")) {
    throw UsageError("doctor: --partitions goes with --config (both saved reports of the same cluster)",
                     usage_text(command));
  }
  const bool containers_only = options.count("containers") > 0, gpus_only = options.count("gpus") > 0;
  if (containers_only && gpus_only) {
    throw UsageError("doctor: --containers and --gpus each ask for one part only: give one", usage_text(command));
  }
  std::vector<doctor::Finding> findings;
  if (!containers_only && !gpus_only) findings = doctor::check_site(gather_facts(options));
  // Saved reports describe another host: this one's runtimes and GPUs say nothing about it.
  if (!options.count("config")) {
    if (!gpus_only) {
      for (auto& finding : container_findings()) findings.push_back(std::move(finding));
    }
    if (!containers_only) {
      for (auto& finding : gpu_findings()) findings.push_back(std::move(finding));
    }
  }
  int failures = 0, warnings = 0;
  for (const auto& finding : findings) {
    failures += finding.verdict == doctor::Verdict::fail;
    warnings += finding.verdict == doctor::Verdict::warn;
  }
  if (options.count("json")) {
    nlohmann::ordered_json report = nlohmann::ordered_json::array();
    for (const auto& finding : findings) {
      report.push_back({{"verdict", doctor::verdict_name(finding.verdict)}, {"check", finding.check},
                        {"found", finding.found}, {"advice", finding.advice}});
    }
    fmt::print("{}\n", report.dump(2));
  } else {
    if (containers_only) {
      fmt::print("# dlx doctor: the container runtimes of this host (docs/containers.md)\n");
    } else if (gpus_only) {
      fmt::print("# dlx doctor: what the system metrics read of this host's GPUs (docs/admin-guide.md)\n");
    } else {
      fmt::print("# dlx doctor: the Slurm settings dlx relies on (docs/admin-guide.md, site-config/slurm.conf.dlx)\n");
    }
    std::size_t width = 0;
    for (const auto& finding : findings) width = std::max(width, finding.check.size());
    for (const auto& finding : findings) {
      fmt::print("{:<5} {:<{}}  {}\n", doctor::verdict_name(finding.verdict), finding.check, width, finding.found);
      if (!finding.advice.empty()) fmt::print("{:<5} {:<{}}  -> {}\n", "", "", width, finding.advice);
    }
    fmt::print("# {} problem{}, {} warning{}\n", failures, failures == 1 ? "" : "s", warnings, warnings == 1 ? "" : "s");
  }
  return failures > 0 ? 1 : 0;
}

}  // namespace dlx::cli
