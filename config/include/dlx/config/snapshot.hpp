// SPDX-License-Identifier: Apache-2.0
#pragma once
// The frozen experiment.yaml: the parsed experiment written back as YAML with everything resolved
// (the seed chosen at submission included), so a run is reproducible from its snapshot alone.
// Parsing a snapshot gives back an equal Experiment.
#include <filesystem>
#include <string>

#include "dlx/config/experiment.hpp"

namespace dlx::config {

std::string to_yaml(const Experiment& experiment);

// The same YAML for a person to keep (`dlx convert-determined`): `header` as comment lines on top
// (one per line of it), and the seed only when the file gave one (a snapshot always records it).
std::string to_yaml_for_editing(const Experiment& experiment, const std::string& header);

// Durable write of <experiment_dir>/experiment.yaml (temp + fsync + rename), mode 0640.
void write_snapshot(const Experiment& experiment, const std::filesystem::path& experiment_dir);

}  // namespace dlx::config
