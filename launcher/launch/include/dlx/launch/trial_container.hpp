// SPDX-License-Identifier: Apache-2.0
#pragma once
// The trial's container (docs/containers.md): when the frozen experiment names an image (its own,
// or the site's default_image), dlx-launch runs the trainer in it through the site's runtime
// (dlx/container/runtime.hpp) instead of directly. Everything else dlx-launch does stays outside
// and unchanged: placement, the searcher's work, the code copy, data staging, the tee of the
// output, the signals, the sampler, the exit protocol.
//
// An OCI layout or archive run by crun or Podman is converted once per user and digest
// (dlx/container/image_cache.hpp) and copied once to each node through the node-local data cache.
//
// Inside, at the same paths as outside: the experiment directory (records, checkpoints), the
// checkpoint directory where it lies elsewhere, the working directory (the code copy), each
// staged dataset (read-only), the experiment's bind_mounts. At /dlx: the dlx Python package
// (/dlx/python) and libdlx_c (/dlx/lib), read-only, on PYTHONPATH and as DLX_LIBRARY, so that
// `import dlx` needs nothing of the image but Python. Passed: dlx's, Slurm's, the rank and
// rendezvous variables, the toolkits' (CUDA_, NCCL_, OMP_, ...), locale and the experiment's
// `environment`; not the host's PATH or LD_LIBRARY_PATH, which would send the image to the host's
// programs and libraries.
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dlx/config/experiment.hpp"
#include "dlx/container/runtime.hpp"
#include "dlx/data/stage.hpp"
#include "dlx/env/environment.hpp"

namespace dlx::launch {

// Where the dlx SDK is mounted inside a container.
inline constexpr const char* kContainerSdkDir = "/dlx";

class TrialContainer {
 public:
  struct Inputs {
    const config::Experiment* experiment = nullptr;
    env::EnvMap env;                        // dlx-launch's environment as the trainer would get it
    std::filesystem::path workdir;          // the trainer's working directory
    std::vector<std::filesystem::path> shared_dirs;     // read-write: experiment, checkpoints
    std::vector<std::filesystem::path> data_dirs;       // read-only: staged datasets
    std::optional<std::filesystem::path> python_package;  // <dir> holding dlx/ (python_package_dir)
    std::optional<std::filesystem::path> library;         // libdlx_c.so
    bool determined_compat = true;          // dlx/compat on PYTHONPATH, as outside
    std::string name;                       // unique on the node while it runs
    std::filesystem::path state_dir;        // the user's private directory for the runtime
    // Where an OCI image's conversion is kept (image_cache.hpp: the site's image_cache/<user>,
    // else <storage>/<user>/.images) and how it is copied to this node (the data cache's).
    std::filesystem::path image_cache_dir;
    std::filesystem::path local_root;
    data::CachePolicy local_policy;
    std::string node_name;
  };

  // nullopt when the experiment names no image. Throws LaunchError (no runtime runs the image,
  // the image is missing).
  static std::optional<TrialContainer> prepare(Inputs inputs, std::FILE* log);

  // The runtime's command line for `command`, with the variables it needs set in this process.
  std::vector<std::string> command_for(const std::vector<std::string>& command);
  const container::ContainerRun& run() const noexcept { return run_; }
  std::string_view runtime_name() const { return runtime_->name(); }
  // The runtime's word that it could not start the trainer's program (Runtime::could_not_run_program).
  bool could_not_run_program(int status, std::string_view last_line) const {
    return runtime_->could_not_run_program(status, last_line);
  }
  // The runtime's word that it could not start a container here (Runtime::could_not_start_container).
  bool could_not_start_container(int status, std::string_view last_line) const {
    return runtime_->could_not_start_container(status, last_line);
  }
  // A notice, passed to the container's trainer by the runtime's own command (Runtime::pass_notice).
  void pass_notice(int signal_number) const { runtime_->pass_notice(run_, signal_number); }
  // After the runtime's process exited by itself: the exit status of a container that outlived
  // it, waited for (Runtime::outliving_container_status); nullopt where none did.
  std::optional<int> outliving_container_status() const { return runtime_->outliving_container_status(run_); }
  // sha256:<hex> of an OCI image's manifest; empty for other kinds.
  const std::string& digest() const noexcept { return digest_; }
  // The image as the experiment names it, and its kind (run().image may be its node-local copy).
  const std::string& image_text() const noexcept { return image_text_; }
  container::ImageRef::Kind source_kind() const noexcept { return source_kind_; }

  TrialContainer(TrialContainer&&) noexcept = default;
  TrialContainer& operator=(TrialContainer&&) = delete;
  ~TrialContainer();

 private:
  static std::optional<TrialContainer> prepare_run(Inputs inputs, std::FILE* log);
  TrialContainer(std::unique_ptr<container::Runtime> runtime, container::ContainerRun run)
      : runtime_(std::move(runtime)), run_(std::move(run)) {}
  std::unique_ptr<container::Runtime> runtime_;
  container::ContainerRun run_;
  std::string digest_;
  std::string image_text_;
  container::ImageRef::Kind source_kind_ = container::ImageRef::Kind::rootfs;
  std::optional<data::StagedData> on_node_;  // the image's node-local copy, held while it runs
  std::vector<FileLock> held_;               // the runtime's holds while it runs (RuntimeCommand::held)
};

// The variables the container gets from `env` (see above), PYTHONPATH made the container's.
std::vector<std::pair<std::string, std::string>> container_variables(const env::EnvMap& env,
                                                                     const config::Experiment& experiment,
                                                                     bool with_sdk, bool determined_compat);

// The GPUs Slurm gave the step, as the node numbers them: SLURM_STEP_GPUS, else SLURM_JOB_GPUS,
// else CUDA_VISIBLE_DEVICES when it holds numbers.
std::vector<int> trial_gpus(const env::EnvMap& env);

}  // namespace dlx::launch
