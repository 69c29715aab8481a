// SPDX-License-Identifier: Apache-2.0
#include "trial_class_check.hpp"

#include <algorithm>
#include <array>
#include <regex>

#include <fmt/format.h>

#include "dlx/common/durable_file.hpp"

namespace dlx::spank {

namespace fs = std::filesystem;

namespace {

// A model definition, not a dataset (std::regex's matching is recursive: its input stays small).
constexpr std::size_t kMaxSourceBytes = 1 << 20;

struct Unsupported {
  const char* base;
  const char* what;
  const char* instead;
};

constexpr std::array kUnsupported{
    Unsupported{"TFKerasTrial", "a TensorFlow/Keras trial (det.keras.TFKerasTrial)",
                "port it to det.pytorch.PyTorchTrial, or train with TensorFlow in a script under the Core API "
                "(det.core.init())"},
    Unsupported{"EstimatorTrial", "a TensorFlow Estimator trial (det.estimator.EstimatorTrial)",
                "port it to det.pytorch.PyTorchTrial, or train in a script under the Core API (det.core.init())"},
    Unsupported{"DeepSpeedTrial", "a DeepSpeed trial (det.pytorch.deepspeed.DeepSpeedTrial)",
                "use det.pytorch.PyTorchTrial (DistributedDataParallel across the trial's ranks), or run DeepSpeed "
                "in a script under the Core API (det.core.init())"},
};

}  // namespace

std::optional<UnsupportedBase> unsupported_trial_base(std::string_view source, const std::string& class_name) {
  // `class Name(Base1, module.Base2):` at the start of a line, bases over several lines allowed.
  // The name is an identifier (config's is_trial_class checked it): nothing in it to escape.
  const std::regex statement("(^|\\n)[ \\t]*class[ \\t]+" + class_name + "[ \\t]*\\(([^)]*)\\)[ \\t]*:");
  std::match_results<std::string_view::const_iterator> match;
  if (!std::regex_search(source.begin(), source.end(), match, statement)) return std::nullopt;
  const std::string bases = match[2].str();
  const auto line = 1 + std::count(source.begin(), match[0].first + match[1].length(), '\n');
  for (const auto& unsupported : kUnsupported) {
    const std::regex base(std::string("(^|[^A-Za-z0-9_])") + unsupported.base + "($|[^A-Za-z0-9_])");
    if (std::regex_search(bases, base)) {
      return UnsupportedBase{unsupported.what, unsupported.instead, static_cast<int>(line)};
    }
  }
  return std::nullopt;
}

TrialClassFinding check_trial_class(const std::string& trial_class, const fs::path& code_dir) {
  const auto colon = trial_class.find(':');
  const std::string module = trial_class.substr(0, colon);
  const std::string class_name = trial_class.substr(colon + 1);
  TrialClassFinding finding;
  if (module == "model_hub" || module.starts_with("model_hub.")) {
    finding.refusal = fmt::format("entrypoint {} is a trial of Determined's model hub (model_hub): dlx does not "
                                  "provide it: copy the trial's code into your own module (a PyTorchTrial runs as "
                                  "it is), or train with the library directly in a script",
                                  trial_class);
    return finding;
  }
  fs::path relative;
  for (std::size_t start = 0; start <= module.size();) {
    const auto dot = module.find('.', start);
    relative /= module.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  std::error_code error;
  fs::path file = code_dir / relative;
  file += ".py";
  if (!fs::is_regular_file(file, error)) file = code_dir / relative / "__init__.py";
  if (!fs::is_regular_file(file, error)) {
    finding.note = fmt::format("entrypoint {}: no {}.py in {}, where the trials start: they import {} from their "
                               "Python path",
                               trial_class, relative.string(), code_dir.string(), module);
    return finding;
  }
  // Non-blocking and fstat'ed (read_small_file): what was a regular file a moment ago may be a
  // FIFO now, whose open would wait for a writer; sbatch must not. Over the limit it throws: the
  // allocator makes that a note.
  const std::string source = read_small_file(file, kMaxSourceBytes);
  if (auto base = unsupported_trial_base(source, class_name)) {
    finding.refusal = fmt::format("entrypoint {} is {} ({}, line {}): dlx runs PyTorchTrial and Core API code: {}",
                                  trial_class, base->what, file.string(), base->line, base->instead);
  }
  return finding;
}

}  // namespace dlx::spank
