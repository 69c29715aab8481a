// SPDX-License-Identifier: Apache-2.0
#pragma once
// The plugstack.conf arguments: `required /path/dlx_spank.so storage_root=/shared/dlx [site_config=FILE] [array_via=sbatch]
// [signal=USR2@60|none] [local_dir=/local/%u]`.
// All defaults live here; unknown keys are rejected so that a typo in a production plugstack.conf
// is reported rather than ignored.
#include <string>
#include <vector>

namespace dlx::spank {

enum class ArrayVia { sbatch, job_submit };

struct PluginOptions {
  std::string storage_root;             // required: where experiment directories are created
  std::string site_config;              // optional: site defaults and limits (config/site.hpp)
  ArrayVia array_via = ArrayVia::sbatch;  // job_submit: leave the array to site-config/job_submit.lua
  // The preemption notice: sbatch's --signal for every experiment whose user gave none (sent to
  // the job steps, i.e. dlx-launch and the trainer; docs/fault-tolerance.md). Empty: none added.
  std::string signal = "USR2@60";
  // The node-local base directory of the data staging cache (`data:`), %n = node name, %u = user
  // name (config/node_dir.hpp), passed to the job steps unexpanded as DLX_SITE_LOCAL_DIR; empty:
  // dlx-launch uses $TMPDIR, else /tmp. An experiment's data: {to: DIR} wins over it.
  std::string local_dir;
};

// Checks a signal= value: USR1, USR2 or TERM (SIG prefix and numbers 10, 12, 15 accepted), with
// an optional @SECONDS (0..65535); returns it in sbatch's --signal form ("USR2@60"), or "" for
// "none". Throws dlx::Error naming the value.
std::string parse_signal_option(const std::string& value);

// Throws dlx::Error with a message naming the argument and the accepted forms.
PluginOptions parse_plugin_options(const std::vector<std::string>& arguments);

}  // namespace dlx::spank
