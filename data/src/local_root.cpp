// SPDX-License-Identifier: Apache-2.0
// Where the node-local cache lives when the experiment names no `data: to:`
// (docs/config-reference.md, `data`): the plugstack's local_dir=, else Slurm's TmpFS, else
// $TMPDIR, else /tmp. One function, and one context (node, user, variables), so that dlx-launch and
// `dlx data` agree on it.
#include <unistd.h>

#include <cstdlib>

#include <fmt/format.h>

#include "dlx/common/accounts.hpp"
#include "dlx/common/host_name.hpp"
#include "dlx/data/stage.hpp"

namespace dlx::data {

namespace fs = std::filesystem;

fs::path expand_local_dir(const std::string& pattern, const std::string& node_name, const std::string& user_name,
                          const std::string& what) {
  std::string expanded;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%') {
      expanded += pattern[i];
      continue;
    }
    const char escape = i + 1 < pattern.size() ? pattern[i + 1] : '\0';
    if (escape == 'n') {
      expanded += node_name;
    } else if (escape == 'u') {
      expanded += user_name;
    } else if (escape == '%') {
      expanded += '%';
    } else {
      throw DataError(fmt::format("{} '{}': unknown escape '%{}' (only %n = node name, %u = user name and %% "
                                  "are expanded)", what, pattern, escape == '\0' ? std::string() : std::string(1, escape)));
    }
    ++i;
  }
  if (expanded.empty() || expanded.front() != '/') {
    throw DataError(fmt::format("{} '{}' is not an absolute path (give the node-local directory from /)", what,
                                pattern));
  }
  return fs::path(expanded).lexically_normal();
}

fs::path resolve_local_root(const LocalRootContext& context) {
  if (!context.local_dir_option.empty()) {
    return expand_local_dir(context.local_dir_option, context.node_name, context.user_name,
                            "the plugstack option local_dir=");
  }
  if (!context.slurm_tmpfs.empty()) {
    // Slurm expands more in TmpFS than %n (%h, the host name, on some versions): a TmpFS dlx
    // cannot expand is passed over for $TMPDIR rather than failing every trial of the site.
    try {
      return expand_local_dir(context.slurm_tmpfs, context.node_name, context.user_name, "Slurm's TmpFS");
    } catch (const DataError&) {
    }
  }
  if (!context.tmpdir.empty() && context.tmpdir.front() == '/') return fs::path(context.tmpdir).lexically_normal();
  return "/tmp";
}

LocalRootContext local_root_context(const std::function<std::optional<std::string>(const char*)>& variable,
                                    std::string node_name) {
  LocalRootContext context;
  // Inside a job step the plugin has exported the site's choices (spank-plugin/remote.hpp), so
  // that dlx-launch and `srun dlx data ls` find the cache where the site wants it.
  context.local_dir_option = variable("DLX_SITE_LOCAL_DIR").value_or("");
  context.slurm_tmpfs = variable("DLX_SLURM_TMPFS").value_or("");
  context.tmpdir = variable("TMPDIR").value_or("");
  context.node_name = std::move(node_name);
  context.user_name = account_name(::geteuid());
  return context;
}

LocalRootContext local_root_context_from_environment() {
  auto variable = [](const char* name) -> std::optional<std::string> {
    if (const char* value = std::getenv(name)) return std::string(value);
    return std::nullopt;
  };
  const auto node = variable("SLURMD_NODENAME");
  return local_root_context(variable, node && !node->empty() ? *node : host_name());
}

fs::path user_cache_dir(const fs::path& local_root) {
  return local_root / fmt::format("dlx-{}", ::geteuid()) / "data";
}

}  // namespace dlx::data
