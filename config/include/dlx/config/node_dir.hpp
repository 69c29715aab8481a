// SPDX-License-Identifier: Apache-2.0
#pragma once
// Node-local directory patterns: `data: {to: DIR}`, `defaults: data: {to: DIR}` and the plugin's
// local_dir= option may hold %n (the node's name) and %u (the user's name), as Slurm's TmpFS=/%n
// does, so that one setting gives every node and user a directory of its own. %% is a '%'.
// Checked here, where the setting is read (sbatch, plugstack.conf); expanded on the node by
// dlx-launch (dlx::data::expand_local_dir).
#include <string>
#include <string_view>

namespace dlx::config {

// Why `pattern` is not a usable node-local directory pattern (not absolute, a placeholder other
// than %n, %u or %%, a ':' that would split DLX_DATA_DIRS, a control character), or "".
std::string node_dir_problem(std::string_view pattern);

}  // namespace dlx::config
