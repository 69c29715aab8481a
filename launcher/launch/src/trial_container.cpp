// SPDX-License-Identifier: Apache-2.0
#include "dlx/launch/trial_container.hpp"

#include <chrono>
#include <cstdlib>

#include <fmt/format.h>

#include "dlx/container/image_cache.hpp"
#include "dlx/container/nvidia_driver.hpp"
#include "dlx/launch/launch_env.hpp"
#include "dlx/launch/launch_error.hpp"
#include "dlx/launch/trial_data.hpp"

namespace dlx::launch {

namespace fs = std::filesystem;

namespace {

// The image's own search path: the host's would find the host's programs first, or none.
constexpr const char* kImagePath = "/usr/local/nvidia/bin:/usr/local/cuda/bin:/usr/local/sbin:/usr/local/bin:"
                                   "/usr/sbin:/usr/bin:/sbin:/bin";

constexpr const char* kPassedPrefixes[] = {
    "DLX_", "SLURM_", "SLURMD_", "OMPI_", "PMIX_", "PMI_", "PRTE_", "NCCL_", "CUDA_", "NVIDIA_", "TORCH_",
    "TORCHELASTIC_", "OMP_", "MKL_", "OPENBLAS_", "UCX_", "FI_", "GLOO_", "HF_", "LC_"};
constexpr const char* kPassedNames[] = {
    "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR", "MASTER_PORT",
    "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TERM", "TMPDIR", "PWD", "PYTHONUNBUFFERED",
    "PYTHONHASHSEED", "PYTHONDONTWRITEBYTECODE"};

bool passed(const std::string& name) {
  for (const char* prefix : kPassedPrefixes) {
    if (name.rfind(prefix, 0) == 0) return true;
  }
  for (const char* exact : kPassedNames) {
    if (name == exact) return true;
  }
  return false;
}

std::string sanitized_name(std::string_view text) {
  std::string name;
  for (const char c : text) {
    const bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
                      c == '_' || c == '.';
    name += safe ? c : '-';
  }
  return name;
}

// Whether `path` is already in the container at its own path, as writable as it needs: below (or
// at) a mount of a host directory at the same path. A user's mount elsewhere (/datasets at /data)
// does not count (the host's /data/x is not what the container shows there), nor a read-only one
// for a directory the trainer writes (the experiment's, below a read-only /shared).
bool covered(const fs::path& path, const std::vector<container::Mount>& mounts, bool read_only) {
  const auto text = path.lexically_normal().string();
  for (const auto& mount : mounts) {
    const auto top = mount.container.lexically_normal().string();
    if (mount.host.lexically_normal().string() != top || (mount.read_only && !read_only)) continue;
    if (text == top || (text.rfind(top, 0) == 0 && text.size() > top.size() && text[top.size()] == '/')) return true;
  }
  return false;
}

void add_mount(std::vector<container::Mount>& mounts, const fs::path& host, bool read_only) {
  const auto normal = host.lexically_normal();
  if (normal.empty() || normal == "/" || covered(normal, mounts, read_only)) return;
  mounts.push_back({normal, normal, read_only});
}

}  // namespace

std::vector<std::pair<std::string, std::string>> container_variables(const env::EnvMap& env,
                                                                     const config::Experiment& experiment,
                                                                     bool with_sdk, bool determined_compat) {
  std::vector<std::pair<std::string, std::string>> vars;
  for (const auto& [name, value] : env) {
    if (passed(name)) vars.emplace_back(name, value);
  }
  // The experiment's own variables, whatever their names, and then the image's PATH and dlx's
  // Python path (after the experiment's PYTHONPATH, which names paths inside the image).
  std::string user_python_path;
  for (const auto& [name, value] : experiment.environment) {
    if (name == "PYTHONPATH") {
      user_python_path = value;
      continue;
    }
    auto existing = std::find_if(vars.begin(), vars.end(), [&](const auto& var) { return var.first == name; });
    if (existing != vars.end()) {
      existing->second = value;
    } else {
      vars.emplace_back(name, value);
    }
  }
  const bool user_path = std::any_of(experiment.environment.begin(), experiment.environment.end(),
                                     [](const auto& var) { return var.first == "PATH"; });
  if (!user_path) vars.emplace_back("PATH", kImagePath);
  std::string python_path;
  if (with_sdk) {
    const auto sdk = fs::path(kContainerSdkDir) / "python";
    python_path = sdk.string();
    if (determined_compat) python_path = (sdk / "dlx" / "compat").string() + ":" + python_path;
    vars.emplace_back("DLX_LIBRARY", (fs::path(kContainerSdkDir) / "lib" / "libdlx_c.so.0").string());
  }
  if (!user_python_path.empty()) python_path = python_path.empty() ? user_python_path : python_path + ":" + user_python_path;
  if (!python_path.empty()) vars.emplace_back("PYTHONPATH", python_path);
  return vars;
}

std::vector<int> trial_gpus(const env::EnvMap& env) {
  for (const char* name : {"SLURM_STEP_GPUS", "SLURM_JOB_GPUS", "CUDA_VISIBLE_DEVICES"}) {
    const auto value = env::lookup(env, name);
    if (!value || value->empty()) continue;
    std::vector<int> gpus;
    bool numbers = true;
    std::size_t start = 0;
    while (start <= value->size()) {
      const auto end = std::min(value->find(',', start), value->size());
      const auto item = value->substr(start, end - start);
      if (item.empty() || item.find_first_not_of("0123456789") != std::string::npos || item.size() > 4) {
        numbers = false;
        break;
      }
      gpus.push_back(std::stoi(item));
      start = end + 1;
    }
    if (numbers) return gpus;
  }
  return {};
}

std::optional<TrialContainer> TrialContainer::prepare(Inputs inputs, std::FILE* log) {
  const auto state_dir = inputs.state_dir;
  try {
    return prepare_run(std::move(inputs), log);
  } catch (...) {
    container::remove_image_tree(state_dir);  // nothing of a run that never started stays
    throw;
  }
}

std::optional<TrialContainer> TrialContainer::prepare_run(Inputs inputs, std::FILE* log) {
  const auto& experiment = *inputs.experiment;
  const auto gpus = trial_gpus(inputs.env);
  const auto image_text = experiment.container.image_for(experiment.resources.gpus_per_node.value_or(0) > 0);
  if (!image_text) return std::nullopt;
  container::ContainerRun run;
  run.image = container::classify_image(*image_text);
  run.force_pull = experiment.container.force_pull;
  std::error_code absent;
  if (!run.image.path.empty() && !fs::exists(run.image.path, absent)) {
    throw LaunchError(fmt::format("the container image {} does not exist on this node (check the path in the "
                                  "experiment's image:, and that the nodes mount it)", image_text->c_str()));
  }
  // An OCI layout or archive: Apptainer runs it as it is; crun and Podman run its root file
  // system, converted once and copied to the node (so the runtime is chosen as for a directory).
  const bool oci = run.image.kind == container::ImageRef::Kind::oci_archive ||
                   run.image.kind == container::ImageRef::Kind::oci_layout;
  const auto source_kind = run.image.kind;
  auto as_chosen = run.image;
  if (oci) as_chosen.kind = container::ImageRef::Kind::rootfs;
  std::unique_ptr<container::Runtime> runtime;
  std::string digest;
  std::optional<data::StagedData> on_node;
  try {
    runtime = container::choose_runtime(experiment.container.runtime, as_chosen);
    if (oci && runtime->name() != "apptainer") {
      const auto cached = container::cached_rootfs(run.image, inputs.image_cache_dir, log);
      digest = cached.digest;
      data::StageRequest request;
      request.sources = {cached.dir};
      request.local_root = inputs.local_root;
      request.policy = inputs.local_policy;
      const auto started = std::chrono::steady_clock::now();
      on_node.emplace(data::StagedData::stage(request, nullptr));
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      const auto& copy = on_node->datasets().front();
      if (log) fmt::print(log, "{} (the image {})\n", describe_staged(copy, inputs.node_name, elapsed), digest);
      run.image = container::classify_image((copy.dir / "rootfs").string());
    }
  } catch (const std::exception& e) {
    throw LaunchError(e.what());
  }
  // The user's bind mounts first: theirs decide a path they name.
  for (const auto& mount : experiment.container.bind_mounts) {
    if (!fs::exists(mount.host_path, absent)) {
      throw LaunchError(fmt::format("bind_mounts: {} does not exist on this node (create it, or remove the mount)",
                                    mount.host_path));
    }
    run.mounts.push_back({mount.host_path, mount.container_path, mount.read_only});
  }
  for (const auto& dir : inputs.shared_dirs) add_mount(run.mounts, dir, false);
  for (const auto& dir : inputs.data_dirs) add_mount(run.mounts, dir, true);
  add_mount(run.mounts, inputs.workdir, false);
  const bool with_sdk = inputs.python_package && inputs.library;
  fs::path library;  // what the container's /dlx/lib/libdlx_c.so.0 is, links resolved
  if (with_sdk) {
    library = fs::canonical(*inputs.library);
    run.mounts.push_back({fs::canonical(*inputs.python_package / "dlx"), fs::path(kContainerSdkDir) / "python" / "dlx", true});
    run.mounts.push_back({library, fs::path(kContainerSdkDir) / "lib" / "libdlx_c.so.0", true});
  }
  run.env = container_variables(inputs.env, experiment, with_sdk, inputs.determined_compat);
  run.workdir = inputs.workdir;
  run.gpus = gpus;
  const bool brings_driver = !gpus.empty() && runtime->needs_driver_files();
  if (brings_driver) run.driver = container::find_driver_files();
  run.name = sanitized_name(inputs.name);
  run.state_dir = inputs.state_dir;
  if (log) {
    fmt::print(log, "dlx-launch: the trainer runs in the container image {} ({}) with {}\n", image_text->c_str(),
               container::to_string(run.image.kind), runtime->name());
    if (brings_driver) {
      if (run.driver.empty()) {
        fmt::print(log, "dlx-launch: warning: the trial has GPUs {} but this node's loader cache (ldconfig -p) "
                        "lists no NVIDIA driver library (libcuda.so.1): CUDA in the container will find no driver\n",
                   fmt::join(gpus, ","));
      } else {
        std::vector<std::string> names;
        for (const auto& file : run.driver) names.push_back(file.container.filename().string());
        fmt::print(log, "dlx-launch: the node's NVIDIA driver in the container, in /dlx/driver: {} (from {})\n",
                   fmt::join(names, " "), run.driver.front().host.parent_path().string());
      }
    }
    // Which library `import dlx` loads in there: the first thing to know when it does not load.
    // Judged by where it was found (an installed link may lead elsewhere), named as resolved.
    if (with_sdk) {
      fmt::print(log, "dlx-launch: the dlx SDK in the container: {}/python and {}/lib/libdlx_c.so.0 ({})\n",
                 kContainerSdkDir, kContainerSdkDir,
                 is_portable_library(*inputs.library)
                     ? fmt::format("the portable libdlx_c {}: images with glibc 2.28 or later", library.string())
                     : fmt::format("dlx's own libdlx_c {}: images with the libraries dlx was built with; the "
                                   "portable one loads in others, docs/containers.md",
                                   library.string()));
    }
  }
  TrialContainer prepared(std::move(runtime), std::move(run));
  prepared.digest_ = std::move(digest);
  prepared.image_text_ = *image_text;
  prepared.source_kind_ = source_kind;
  prepared.on_node_ = std::move(on_node);
  return prepared;
}

std::vector<std::string> TrialContainer::command_for(const std::vector<std::string>& command) {
  run_.command = command;
  container::RuntimeCommand runtime_command;
  try {
    runtime_command = runtime_->command(run_);
  } catch (const std::exception& e) {
    throw LaunchError(fmt::format("the container runtime {} cannot run the image {}: {}", runtime_->name(),
                                  run_.image.text, e.what()));
  }
  for (const auto& note : runtime_command.notes) fmt::print(stderr, "dlx-launch: {}\n", note);
  held_ = std::move(runtime_command.held);
  for (const auto& [name, value] : runtime_command.env) ::setenv(name.c_str(), value.c_str(), 1);
  return runtime_command.argv;
}

TrialContainer::~TrialContainer() {
  if (!runtime_) return;  // moved from
  runtime_->cleanup(run_);
  // The bundle, the skeleton and the environment file (the trainer's variables) go with the run.
  container::remove_image_tree(run_.state_dir);
}

}  // namespace dlx::launch
