// SPDX-License-Identifier: Apache-2.0
#pragma once
// Hyperparameters in dlx's HDF5 files (trial.h5: record/, and checkpoints: checkpoint/, which share
// it here): the JSON text is authoritative (order, exact types); a group with one attribute per
// hyperparameter is its view for HDF5 tools.
#include <filesystem>
#include <string>

#include <hdf5.h>
#include <nlohmann/json.hpp>

#include "dlx/common/bounded_json.hpp"

namespace dlx::h5 {

// The flat object as JSON text; throws H5Error when it is not an object.
std::string hparams_as_json(const nlohmann::ordered_json& hparams);

// Group `group_name` below `parent` with one attribute per hyperparameter: int64, float64,
// UTF-8 string, or int8 0/1 for booleans; null, a list or a mapping as its JSON text (a string).
// Strings are variable-length (h5py: str) or fixed-length (kept out of the unchecksummed global
// heap: checkpoints).
enum class Strings { variable_length, fixed_length };
void write_hparams_group(hid_t parent, const std::string& group_name,
                         const nlohmann::ordered_json& hparams, const std::filesystem::path& file,
                         Strings strings = Strings::variable_length);

// Parses hparams_json text; throws H5Error naming `file` unless it is a JSON object
// nested at most kMaxHparamsDepth levels (values may be lists and mappings: Determined's).
using dlx::kMaxHparamsDepth;
nlohmann::ordered_json parse_hparams_json(const std::string& text,
                                          const std::filesystem::path& file);

}  // namespace dlx::h5
