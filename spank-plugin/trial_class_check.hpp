// SPDX-License-Identifier: Apache-2.0
#pragma once
// The allocator's look at a Determined Trial class (`entrypoint: model_def:MyTrial`) before
// anything is queued: dlx's harness runs PyTorchTrial subclasses only, so a TFKerasTrial,
// EstimatorTrial or DeepSpeedTrial, or a class of Determined's model hub (model_hub.*), is
// refused at sbatch, with what to use instead, rather than failing in every trial. Read from the
// module's source in the directory trials start in (sbatch runs as the submitting user): the
// class statement's bases, no import, no code run. A class the
// module does not define itself (imported from elsewhere) is left to the harness, which refuses
// it in the trial's log (exit 78).
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace dlx::spank {

struct UnsupportedBase {
  std::string what;     // "a TensorFlow/Keras trial (det.keras.TFKerasTrial)"
  std::string instead;  // what to use
  int line = 0;         // of the class statement, from 1
};

// What the class statement of `class_name` in `source` derives from: nullopt when the source
// does not define the class or its bases name no Trial API that dlx cannot run.
std::optional<UnsupportedBase> unsupported_trial_base(std::string_view source, const std::string& class_name);

struct TrialClassFinding {
  std::optional<std::string> refusal;  // the class cannot run under dlx: the message
  std::optional<std::string> note;     // something worth saying that is no refusal (module not found)
};

// `trial_class` is "module.path:Class"; `code_dir` the directory the trials start in. Reads a
// regular file of at most 1 MiB without blocking (dlx::read_small_file); throws dlx::Error for
// one it cannot read.
TrialClassFinding check_trial_class(const std::string& trial_class, const std::filesystem::path& code_dir);

}  // namespace dlx::spank
