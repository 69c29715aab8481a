// Where the node-local cache lives when the experiment names no `data: to:` (data-api.md): the
// plugstack's local_dir=, else Slurm's TmpFS, else $TMPDIR, else /tmp. One function, so that
// dlx-launch and `dlx data` agree on it.
#include <unistd.h>

#include <array>
#include <cstdlib>

#include <fmt/format.h>

#include "dlx/common/trusted_path.hpp"
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

LocalRootContext local_root_context_from_environment() {
  LocalRootContext context;
  // Inside a job step the plugin has exported the site's choices (spank-plugin/remote.hpp), so
  // `srun dlx data ls` finds the cache where the trials put it.
  if (const char* local_dir = std::getenv("DLX_SITE_LOCAL_DIR")) context.local_dir_option = local_dir;
  if (const char* tmp_fs = std::getenv("DLX_SLURM_TMPFS")) context.slurm_tmpfs = tmp_fs;
  if (const char* tmpdir = std::getenv("TMPDIR")) context.tmpdir = tmpdir;
  if (const char* node = std::getenv("SLURMD_NODENAME"); node && *node) {
    context.node_name = node;
  } else {
    std::array<char, 256> host{};
    if (::gethostname(host.data(), host.size() - 1) == 0) context.node_name = host.data();
  }
  context.user_name = user_name_of(::geteuid());
  return context;
}

fs::path user_cache_dir(const fs::path& local_root) {
  return local_root / fmt::format("dlx-{}", ::geteuid()) / "data";
}

}  // namespace dlx::data
