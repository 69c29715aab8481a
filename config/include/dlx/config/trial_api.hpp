// SPDX-License-Identifier: Apache-2.0
#pragma once
// A Determined Trial class as the experiment's entrypoint (`entrypoint: model_def:MyTrial`),
// which the parser turns into the harness's command (config/src/parse_trial_api.cpp).
#include <optional>
#include <string>

#include "dlx/config/experiment.hpp"

namespace dlx::config {

// "model_def:MyTrial" when the parsed entrypoint runs dlx's PyTorchTrial harness, else nullopt.
std::optional<std::string> trial_class_of(const Experiment& experiment);

}  // namespace dlx::config
