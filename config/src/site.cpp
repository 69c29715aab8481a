// SPDX-License-Identifier: Apache-2.0
#include "dlx/config/site.hpp"

#include <fmt/format.h>

#include "dlx/config/names.hpp"
#include "dlx/config/parse.hpp"
#include "parse_sections.hpp"
#include "text_checks.hpp"

namespace dlx::config {

SiteConfig parse_site_config(std::string_view text, const std::string& file_label) {
  auto document = detail::load_document(text, file_label);
  detail::MappingReader root(document, "", file_label);
  root.allow_only({"defaults", "limits", "container"});
  SiteConfig site;
  site.source = file_label;
  if (root.has("defaults")) {
    auto defaults = root.mapping("defaults");
    defaults.allow_only({"resources", "checkpoint", "environment", "max_restarts", "code", "data"});
    if (defaults.has("resources")) detail::parse_resources(defaults.mapping("resources"), site.resources);
    if (defaults.has("checkpoint")) detail::parse_checkpoint(defaults.mapping("checkpoint"), site.checkpoint);
    if (defaults.has("environment")) detail::parse_environment(defaults.mapping("environment"), site.environment);
    if (defaults.has("code")) detail::parse_code(defaults.mapping("code"), site.code, detail::CodeKeys::site);
    if (defaults.has("data")) detail::parse_data(defaults.mapping("data"), site.data, detail::DataKeys::site_defaults);
    if (auto restarts = defaults.optional_integer_in("max_restarts", 0, 1000, "how many crashes a trial may survive")) {
      site.max_restarts = static_cast<int>(*restarts);
    }
  }
  if (root.has("limits")) {
    auto limits = root.mapping("limits");
    limits.allow_only({"max_trials", "data", "mps"});
    if (auto mps = limits.optional_boolean("mps")) site.allow_mps = *mps;
    if (limits.has("data")) detail::parse_data(limits.mapping("data"), site.data, detail::DataKeys::site_limits);
    if (auto cap = limits.optional_integer_in("max_trials", 1, kMaxTrials, "the most trials one experiment may run")) {
      site.max_trials = static_cast<int>(*cap);
    }
  }
  if (root.has("container")) {
    detail::parse_container(root.mapping("container"), site.container, detail::ContainerKeys::site);
  }
  return site;
}

SiteConfig parse_site_config_file(const std::filesystem::path& path) {
  return parse_site_config(detail::read_config_file(path, "site config"), path.string());
}

void check_site_allows(const Experiment& experiment, const SiteConfig* site) {
  if (!experiment.resources.mps || (site != nullptr && site->allow_mps)) return;
  throw ConfigError(SourcePosition{experiment.source_file, 0, 0}, "resources.mps",
                    site != nullptr ? fmt::format("asks for CUDA MPS, which this site does not allow (its "
                                                  "file {} has no limits: {{mps: true}})", site->source)
                                    : std::string("asks for CUDA MPS, which this cluster does not allow (its "
                                                  "dlx plugin has no site file with limits: {mps: true})"),
                    "remove resources.mps (packed trials then share the GPU in turns), or ask your "
                    "administrator to allow MPS (docs/admin-guide.md, \"Sharing GPUs\")");
}

}  // namespace dlx::config
