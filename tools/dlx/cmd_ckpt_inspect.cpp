// SPDX-License-Identifier: Apache-2.0
// dlx ckpt verify PATH... (exit status is the verdict) and dlx ckpt show PATH (metadata, state,
// tensors with dtype, shape, size and checksums).
#include <iostream>
#include <variant>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "cmd_ckpt.hpp"
#include "dlx/checkpoint/checkpoint.hpp"
#include "dlx/config/display_text.hpp"
#include "json_output.hpp"
#include "options.hpp"
#include "table.hpp"

namespace dlx::cli::ckpt {
namespace {

std::string shape_text(const std::vector<std::uint64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

nlohmann::ordered_json state_json(const checkpoint::StateMap& state) {
  auto out = nlohmann::ordered_json::object();
  for (const auto& [name, value] : state)
    std::visit([&](const auto& v) { out[name] = v; }, value);
  return out;
}

nlohmann::ordered_json summary_json(const checkpoint::CheckpointSummary& s) {
  const auto& m = s.metadata;
  nlohmann::ordered_json out{{"experiment", m.experiment}, {"trial_id", m.trial_id},
                             {"step", m.step}, {"epoch", m.epoch}, {"world_size", m.world_size},
                             {"format_version", m.format_version},
                             {"library_version", m.library_version},
                             {"created_unix", m.created_unix}, {"hparams", m.hparams},
                             {"metric_name", m.metric_name}};
  out["metric_value"] = m.metric_value ? nlohmann::ordered_json(*m.metric_value)
                                       : nlohmann::ordered_json();
  out["state"] = state_json(s.state);
  out["tensors"] = nlohmann::ordered_json::array();
  for (const auto& t : s.tensors)
    out["tensors"].push_back({{"name", t.name}, {"dtype", std::string(checkpoint::dtype_name(t.dtype))},
                              {"shape", t.shape}, {"bytes", t.bytes}, {"crc32c", t.crc32c}});
  return out;
}

}  // namespace

CommandLine verify_command_line() {
  namespace po = boost::program_options;
  CommandLine command("ckpt verify", "PATH... [--json]",
                      "Reads every byte of each checkpoint file and checks it against the file's\n"
                      "checksums, metadata and index: one line per file, ok or FAILED with why.\n"
                      "Exit status 0 when every file is valid, 1 otherwise.",
                      "dlx ckpt verify trials/0/checkpoints/step-*.h5");
  command.options.add_options()("json", "print JSON");
  command.operands.add_options()("paths", po::value<std::vector<std::string>>()->required(), "checkpoint files");
  command.positional.add("paths", -1);
  return command;
}

CommandLine show_command_line() {
  namespace po = boost::program_options;
  CommandLine command("ckpt show", "PATH [--json]",
                      "What one checkpoint file holds: its metadata (experiment, trial, step,\n"
                      "hyperparameters, metric), its state values and its tensors with dtype, shape,\n"
                      "size and checksums. The metadata is verified; the tensors' bytes are not read\n"
                      "(dlx ckpt verify reads them). A long state value is cut to one line; --json\n"
                      "prints it whole.",
                      "dlx ckpt show trials/0/checkpoints/step-200.h5");
  command.options.add_options()("json", "print JSON");
  command.operands.add_options()("path", po::value<std::string>()->required(), "checkpoint file");
  command.positional.add("path", 1);
  return command;
}

int run_verify(const Arguments& arguments) {
  auto values = parse_options(arguments, verify_command_line());
  bool json = values.count("json") > 0;
  auto results = nlohmann::ordered_json::array();
  int failed = 0;
  for (const auto& path : values["paths"].as<std::vector<std::string>>()) {
    try {
      auto summary = checkpoint::verify_checkpoint(path);
      std::uint64_t bytes = 0;
      for (const auto& t : summary.tensors) bytes += t.bytes;
      results.push_back({{"path", path}, {"valid", true}, {"step", summary.metadata.step}});
      if (!json)
        fmt::print("ok      {}  (step {}, {} tensors, {})\n", path, summary.metadata.step,
                   summary.tensors.size(), human_bytes(bytes));
    } catch (const std::exception& e) {
      ++failed;
      results.push_back({{"path", path}, {"valid", false}, {"problem", e.what()}});
      if (!json) fmt::print("FAILED  {}\n        {}\n", path, e.what());
    }
  }
  if (json) std::cout << json_text(results) << "\n";
  else fmt::print("# {} of {} valid\n", results.size() - static_cast<std::size_t>(failed), results.size());
  return failed == 0 ? 0 : 1;
}

int run_show(const Arguments& arguments) {
  auto values = parse_options(arguments, show_command_line());
  auto summary = checkpoint::read_checkpoint_summary(values["path"].as<std::string>());
  if (values.count("json")) {
    std::cout << json_text(summary_json(summary)) << "\n";
    return 0;
  }
  auto json = summary_json(summary);
  for (const auto& [key, value] : json.items())
    if (key != "tensors" && key != "state") fmt::print("# {:<16} {}\n", key, json_text(value, -1));
  // A long value (dlx.torch's structure of every state dict) is cut to one line; --json has it.
  for (const auto& [name, value] : json["state"].items())
    fmt::print("# state.{:<10} {}\n", name, config::abbreviated(json_text(value, -1), 160));
  Table table({"tensor", "dtype", "shape", "bytes", "crc32c"});
  for (const auto& t : summary.tensors)
    table.add_row({t.name, std::string(checkpoint::dtype_name(t.dtype)), shape_text(t.shape),
                   std::to_string(t.bytes),
                   fmt::format("{:08x}{}", t.crc32c.front(),
                               t.crc32c.size() > 1 ? fmt::format(" (+{} blocks)", t.crc32c.size() - 1)
                                                   : "")});
  std::cout << table.render();
  fmt::print("# metadata verified; tensor bytes not read (dlx ckpt verify reads them)\n");
  return 0;
}

}  // namespace dlx::cli::ckpt
