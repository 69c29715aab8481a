// SPDX-License-Identifier: Apache-2.0
#pragma once
// Which file of a plugstack.conf holds dlx's line. Slurm's plugstack.conf may hand its lines to
// other files with `include PATTERN` (Debian's is only `include /etc/slurm/plugstack.conf.d/*.conf`,
// where the slurm-spank-plugin-dlx package's line goes): `dlx doctor` and the commands that read
// the plugin's arguments (storage_root, site_config) follow the includes as Slurm does.
#include <optional>
#include <string>

namespace dlx::doctor {

struct PlugstackFile {
  std::string path;
  std::string text;
};

// The file, among `path` and those its include lines name (nested, in Slurm's order), whose
// text has a dlx_spank.so line (find_plugin_line); `path` itself when none has. nullopt when
// `path` cannot be read. Like Slurm's spank.c, an include's pattern is a glob(3) pattern, and a
// relative one is relative to the directory of the file that names it. Files that cannot be read
// are passed over.
std::optional<PlugstackFile> plugstack_file_with_dlx(const std::string& path);

}  // namespace dlx::doctor
