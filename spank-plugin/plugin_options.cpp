// SPDX-License-Identifier: Apache-2.0
#include "plugin_options.hpp"

#include <fmt/format.h>

#include "dlx/common/error.hpp"
#include "dlx/config/node_dir.hpp"

namespace dlx::spank {

namespace {

constexpr const char* kSignalForms =
    "use signal=USR2@60 (USR1, USR2 or TERM, @ the seconds of notice before a time limit), or "
    "signal=none";

bool all_digits(const std::string& text) {
  return !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
}

}  // namespace

std::string parse_signal_option(const std::string& value) {
  if (value == "none") return "";
  auto at = value.find('@');
  std::string name = value.substr(0, at);
  std::string seconds = at == std::string::npos ? "" : value.substr(at + 1);
  if (name.find(':') != std::string::npos) {
    throw Error(fmt::format("plugstack.conf: signal '{}' has a prefix: dlx sends the notice to "
                            "the job steps only (B: would kill the batch shell); {}", value, kSignalForms));
  }
  if (name.starts_with("SIG")) name = name.substr(3);
  if (name == "10") name = "USR1";
  if (name == "12") name = "USR2";
  if (name == "15") name = "TERM";
  if (name != "USR1" && name != "USR2" && name != "TERM") {
    throw Error(fmt::format("plugstack.conf: signal '{}' is not one the trainer catches; {}",
                            value, kSignalForms));
  }
  if (at != std::string::npos && (!all_digits(seconds) || seconds.size() > 5 ||
                                  std::stoi(seconds) > 65535)) {
    throw Error(fmt::format("plugstack.conf: signal '{}': '{}' is not a number of seconds "
                            "(0-65535); {}", value, seconds, kSignalForms));
  }
  return at == std::string::npos ? name : name + "@" + std::to_string(std::stoi(seconds));
}

PluginOptions parse_plugin_options(const std::vector<std::string>& arguments) {
  PluginOptions options;
  for (const auto& argument : arguments) {
    auto equals = argument.find('=');
    if (equals == std::string::npos) {
      throw Error(fmt::format("plugstack.conf: argument '{}' is not key=value "
                              "(use storage_root=DIR, site_config=FILE, array_via=sbatch|job_submit, signal=SIG@SECONDS|none "
                              "and local_dir=DIR)", argument));
    }
    std::string key = argument.substr(0, equals), value = argument.substr(equals + 1);
    if (key == "storage_root") {
      if (value.empty() || value.front() != '/') {
        throw Error(fmt::format("plugstack.conf: storage_root must be an absolute path, got '{}'", value));
      }
      options.storage_root = value;
    } else if (key == "site_config") {
      if (value.empty() || value.front() != '/') {
        throw Error(fmt::format("plugstack.conf: site_config must be an absolute path, got '{}'", value));
      }
      options.site_config = value;
    } else if (key == "array_via") {
      if (value == "sbatch") {
        options.array_via = ArrayVia::sbatch;
      } else if (value == "job_submit") {
        options.array_via = ArrayVia::job_submit;
      } else {
        throw Error(fmt::format("plugstack.conf: array_via must be sbatch or job_submit, got '{}'", value));
      }
    } else if (key == "signal") {
      options.signal = parse_signal_option(value);
    } else if (key == "local_dir") {
      if (auto problem = config::node_dir_problem(value); !problem.empty()) {
        throw Error(fmt::format("plugstack.conf: local_dir '{}' {} (name a node-local directory such as "
                                "local_dir=/local/%u; %n is the node's name, %u the user's)", value, problem));
      }
      options.local_dir = value;
    } else {
      throw Error(fmt::format("plugstack.conf: unknown argument '{}' (known: storage_root, site_config, array_via, signal, local_dir)", key));
    }
  }
  if (options.storage_root.empty()) {
    throw Error("plugstack.conf: storage_root=DIR is not set (the administrator must name the shared "
                "directory for experiments)");
  }
  return options;
}

}  // namespace dlx::spank
