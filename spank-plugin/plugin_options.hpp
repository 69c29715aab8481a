#pragma once
// The plugstack.conf arguments: `required /path/dlx_spank.so storage_root=/shared/dlx [site_config=FILE] [array_via=sbatch]`.
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
};

// Throws dlx::Error with a message naming the argument and the accepted forms.
PluginOptions parse_plugin_options(const std::vector<std::string>& arguments);

}  // namespace dlx::spank
