// SPDX-License-Identifier: Apache-2.0
#include "metadata_digest.hpp"

#include <cmath>
#include <string>

#include "dlx/checkpoint/dtype.hpp"
#include "dlx/common/crc32c.hpp"

namespace dlx::checkpoint::detail {
namespace {

nlohmann::ordered_json state_json(const StateMap& state) {
  auto out = nlohmann::ordered_json::object();
  for (const auto& [name, value] : state) {
    if (const auto* integer = std::get_if<std::int64_t>(&value)) out[name] = {{"int64", *integer}};
    else if (const auto* real = std::get_if<double>(&value))
      out[name] = {{"float64", std::isfinite(*real) ? nlohmann::ordered_json(*real)
                                                    : nlohmann::ordered_json(std::to_string(*real))}};
    else out[name] = {{"string", std::get<std::string>(value)}};
  }
  return out;
}

}  // namespace

std::uint32_t metadata_digest(const CheckpointSummary& summary) {
  const auto& m = summary.metadata;
  nlohmann::ordered_json doc;
  doc["format_version"] = m.format_version;
  doc["library_version"] = m.library_version;
  doc["experiment"] = m.experiment;
  doc["trial_id"] = m.trial_id;
  doc["step"] = m.step;
  doc["epoch"] = m.epoch;
  doc["world_size"] = m.world_size;
  doc["created_unix"] = m.created_unix;
  doc["hparams"] = m.hparams;
  doc["metric_name"] = m.metric_name;
  doc["metric_value"] = m.metric_value && std::isfinite(*m.metric_value)
                            ? nlohmann::ordered_json(*m.metric_value)
                            : nlohmann::ordered_json();
  doc["state"] = state_json(summary.state);
  auto tensors = nlohmann::ordered_json::array();
  for (const auto& t : summary.tensors)
    tensors.push_back({{"name", t.name},
                       {"dtype", std::string(dtype_name(t.dtype))},
                       {"shape", t.shape},
                       {"crc32c", t.crc32c}});
  doc["tensors"] = std::move(tensors);
  auto text = doc.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  return crc32c(std::string_view(text));
}

}  // namespace dlx::checkpoint::detail
