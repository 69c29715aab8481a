// SPDX-License-Identifier: Apache-2.0
// The `data` section of the experiment file, the site's data defaults and cache limits, and the
// node-directory patterns (%n, %u) that `to:` and the plugin's local_dir= take.
#include <catch2/catch.hpp>

#include <string>

#include "dlx/config/node_dir.hpp"
#include "dlx/config/parse.hpp"
#include "dlx/config/site.hpp"
#include "dlx/config/snapshot.hpp"

using dlx::config::ConfigError;
using dlx::config::parse_experiment;
using dlx::config::parse_site_config;

namespace {

const std::string kBase = "name: e\nentrypoint: python3 train.py\nsearcher: {name: single, metric: loss}\n";

std::string error_of(const std::string& text, const dlx::config::SiteConfig* site = nullptr) {
  try {
    parse_experiment(text, "exp.yaml", site);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

std::string site_error_of(const std::string& text) {
  try {
    parse_site_config(text, "site.yaml");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("data: defaults, every key, and the frozen snapshot keeps them", "[config][data]") {
  auto plain = parse_experiment(kBase, "exp.yaml");
  CHECK(plain.data.stage.empty());
  CHECK_FALSE(plain.data.to);
  CHECK_FALSE(plain.data.checksum);
  CHECK(plain.data.max_bytes == 0u);
  CHECK(plain.data.high_watermark == 0.9);
  CHECK(plain.data.low_watermark == 0.8);
  CHECK(dlx::config::to_yaml(plain).find("data:") == std::string::npos);

  auto set = parse_experiment(kBase + "data: {stage: [/shared/mnist, ../imagenet.tar, weights.bin], to: /local/%u,\n"
                                      "       checksum: true, max_bytes: 20GB, high_watermark: 0.85,"
                                      " low_watermark: 0.5}\n",
                              "exp.yaml");
  CHECK(set.data.stage == std::vector<std::string>{"/shared/mnist", "../imagenet.tar", "weights.bin"});
  CHECK(set.data.to == "/local/%u");
  CHECK(set.data.checksum);
  CHECK(set.data.max_bytes == 20'000'000'000u);
  CHECK(set.data.high_watermark == 0.85);
  CHECK(set.data.low_watermark == 0.5);

  auto again = parse_experiment(dlx::config::to_yaml(set), "experiment.yaml");
  CHECK(again.data.stage == set.data.stage);
  CHECK(again.data.to == "/local/%u");
  CHECK(again.data.checksum);
  CHECK(again.data.max_bytes == 20'000'000'000u);
  CHECK(again.data.high_watermark == 0.85);
  CHECK(again.data.low_watermark == 0.5);

  // One path needs no list.
  CHECK(parse_experiment(kBase + "data: {stage: /shared/mnist}\n", "exp.yaml").data.stage ==
        std::vector<std::string>{"/shared/mnist"});
}

TEST_CASE("data: each mistake names the position, the key, the value and the fix", "[config][data]") {
  CHECK(error_of(kBase + "data: {to: /local}\n") ==
        "exp.yaml:4:7: data.stage: is required but missing (name the datasets to copy to each node, e.g. data: "
        "{stage: [/shared/datasets/mnist]})");

  auto message = error_of(kBase + "data: {stage: []}\n");
  CHECK_THAT(message, Catch::StartsWith("exp.yaml:4:15: data.stage: is an empty list"));
  CHECK_THAT(message, Catch::Contains("leave data: out"));

  message = error_of(kBase + "data: {stage: {a: b}}\n");
  CHECK_THAT(message, Catch::Contains("data.stage: must be a path or a list of paths"));

  message = error_of(kBase + "data: {stage: [/a, [/b]]}\n");
  CHECK_THAT(message, Catch::StartsWith("exp.yaml:4:20: data.stage: each entry must be a path"));

  message = error_of(kBase + "data: {stage: ['']}\n");
  CHECK_THAT(message, Catch::Contains("data.stage: has an empty path"));

  message = error_of(kBase + "data: {stage: [~/mnist]}\n");
  CHECK_THAT(message, Catch::Contains("data.stage: '~/mnist': '~' is not expanded"));
  CHECK_THAT(message, Catch::Contains("write the absolute path"));

  message = error_of(kBase + "data: {stage: [\"/data/a\\nb\"]}\n");
  CHECK_THAT(message, Catch::Contains("'/data/a\\nb' holds a control character"));

  message = error_of(kBase + "data: {stage: [/data/mnist, /data/./mnist/]}\n");
  CHECK_THAT(message, Catch::StartsWith("exp.yaml:4:29: data.stage: '/data/./mnist/' is listed twice"));

  message = error_of(kBase + "data: {stage: [/a], to: local}\n");
  CHECK_THAT(message, Catch::StartsWith("exp.yaml:4:25: data.to: 'local' is not an absolute path"));
  CHECK_THAT(message, Catch::Contains("%n: node name, %u: user name"));

  message = error_of(kBase + "data: {stage: [/a], to: /local/%j}\n");
  CHECK_THAT(message, Catch::Contains("data.to: '/local/%j' has the unknown placeholder %j"));

  message = error_of(kBase + "data: {stage: [/a], to: '/local:/x'}\n");
  CHECK_THAT(message, Catch::Contains("which would split DLX_DATA_DIRS"));

  message = error_of(kBase + "data: {stage: [/a], to: ''}\n");
  CHECK_THAT(message, Catch::Contains("data.to: '' is empty"));

  message = error_of(kBase + "data: {stage: [/a], checksum: sometimes}\n");
  CHECK_THAT(message, Catch::Contains("data.checksum"));
  CHECK_THAT(message, Catch::Contains("true or false"));

  message = error_of(kBase + "data: {stage: [/a], max_bytes: 1.5TB}\n");
  CHECK_THAT(message, Catch::Contains("data.max_bytes: '1.5TB' is not a size (write a size such as 100GB"));
  message = error_of(kBase + "data: {stage: [/a], max_bytes: [1]}\n");
  CHECK_THAT(message, Catch::Contains("data.max_bytes: expected a size, got a list or mapping"));

  message = error_of(kBase + "data: {stage: [/a], high_watermark: 1.5}\n");
  CHECK_THAT(message, Catch::Contains("data.high_watermark: is 1.5, not a fraction in (0, 1]"));
  message = error_of(kBase + "data: {stage: [/a], low_watermark: 0.95}\n");
  CHECK_THAT(message, Catch::Contains("data.low_watermark: low_watermark 0.95 is not below high_watermark 0.9"));
  message = error_of(kBase + "data: {stage: [/a], high_watermark: 0.5}\n");
  CHECK_THAT(message, Catch::Contains("data.high_watermark: low_watermark 0.8 is not below high_watermark 0.5"));

  message = error_of(kBase + "data: {stage: [/a], stages: [/b]}\n");
  CHECK_THAT(message, Catch::Contains("stages"));
  CHECK_THAT(message, Catch::Contains("did you mean 'stage'"));
}

TEST_CASE("data: Determined's free-form data is still ignored with a warning", "[config][data]") {
  auto determined = parse_experiment(kBase + "data: {url: 'https://example.org/mnist.tgz', worker_count: 4}\n",
                                     "exp.yaml");
  CHECK(determined.data.stage.empty());
  REQUIRE(determined.warnings.size() == 1);
  CHECK_THAT(determined.warnings[0], Catch::Contains("data (free-form data for Determined's Trial API"));
  CHECK_THAT(determined.warnings[0], Catch::Contains("dlx's own data: section has stage:"));
  // A key of dlx's makes the section dlx's, checked as such.
  CHECK_THAT(error_of(kBase + "data: {url: x, stage: [/a]}\n"), Catch::Contains("exp.yaml:4:8: data.url: unknown key in data (known keys in data: stage, to, checksum"));
  CHECK(parse_experiment(kBase + "data: {stage: [/a]}\n", "exp.yaml").warnings.empty());
}

TEST_CASE("site: defaults.data and limits.data, an experiment may only lower the limits", "[config][data]") {
  auto site = parse_site_config("defaults:\n  data: {to: /local/%u, checksum: true}\n"
                                "limits:\n  data: {max_bytes: 100GB, high_watermark: 0.8, low_watermark: 0.6}\n",
                                "site.yaml");
  CHECK(site.data.to == "/local/%u");
  CHECK(site.data.checksum);
  CHECK(site.data.max_bytes == 100'000'000'000u);
  CHECK(site.data.high_watermark == 0.8);
  CHECK(site.data.low_watermark == 0.6);

  auto experiment = parse_experiment(kBase + "data: {stage: [/a]}\n", "exp.yaml", &site);
  CHECK(experiment.data.to == "/local/%u");
  CHECK(experiment.data.checksum);
  CHECK(experiment.data.max_bytes == 100'000'000'000u);
  CHECK(experiment.data.high_watermark == 0.8);
  // The site's limits are frozen with the experiment: dlx-launch reads them from the snapshot.
  auto frozen = parse_experiment(dlx::config::to_yaml(experiment), "experiment.yaml");
  CHECK(frozen.data.max_bytes == 100'000'000'000u);
  CHECK(frozen.data.low_watermark == 0.6);

  auto lowered = parse_experiment(kBase + "data: {stage: [/a], to: /scratch, checksum: false, max_bytes: 10GB,"
                                          " high_watermark: 0.7, low_watermark: 0.5}\n",
                                  "exp.yaml", &site);
  CHECK(lowered.data.to == "/scratch");
  CHECK_FALSE(lowered.data.checksum);
  CHECK(lowered.data.max_bytes == 10'000'000'000u);
  CHECK(lowered.data.high_watermark == 0.7);

  CHECK(error_of(kBase + "data: {stage: [/a], max_bytes: 200GB}\n", &site) ==
        "exp.yaml:4:32: data.max_bytes: is 200 GB, above this site's cap of 100 GB (set in site.yaml) (use at most "
        "100 GB, or leave max_bytes out)");
  CHECK_THAT(error_of(kBase + "data: {stage: [/a], max_bytes: 0}\n", &site),
             Catch::Contains("is 0 (no cap), above this site's cap of 100 GB"));
  CHECK_THAT(error_of(kBase + "data: {stage: [/a], high_watermark: 0.95, low_watermark: 0.5}\n", &site),
             Catch::Contains("data.high_watermark: is 0.95, above this site's 0.8 (set in site.yaml)"));

  CHECK_THAT(site_error_of("defaults:\n  data: {stage: [/a]}\n"), Catch::Contains("site.yaml:2:"));
  CHECK_THAT(site_error_of("defaults:\n  data: {stage: [/a]}\n"), Catch::Contains("defaults.data.stage: unknown key in defaults.data (known keys in defaults.data: to, checksum)"));
  CHECK_THAT(site_error_of("defaults:\n  data: {max_bytes: 1GB}\n"), Catch::Contains("defaults.data.max_bytes: unknown key"));
  CHECK_THAT(site_error_of("limits:\n  data: {to: /local}\n"), Catch::Contains("limits.data.to: unknown key in limits.data (known keys in limits.data: max_bytes, high_watermark, low_watermark)"));
  CHECK_THAT(site_error_of("limits:\n  data: {max_bytes: lots}\n"),
             Catch::Contains("limits.data.max_bytes: 'lots' is not a size"));
  CHECK_THAT(site_error_of("limits:\n  data: {high_watermark: 0}\n"),
             Catch::Contains("limits.data.high_watermark: is 0, not a fraction in (0, 1]"));
  CHECK_THAT(site_error_of("defaults:\n  data: {to: relative/%u}\n"),
             Catch::Contains("defaults.data.to: 'relative/%u' is not an absolute path"));
}

TEST_CASE("node directory patterns: %n, %u and %% accepted, mistakes named", "[config][data]") {
  using dlx::config::node_dir_problem;
  CHECK(node_dir_problem("/local/%n/%u").empty());
  CHECK(node_dir_problem("/x/%%n").empty());
  CHECK(node_dir_problem("x") == "is not an absolute path");
  CHECK(node_dir_problem("/x/%") == "ends with a lone '%'");
  CHECK(node_dir_problem("/x/%h") == "has the unknown placeholder %h (%n is the node's name, %u the user's, %% a '%')");
  CHECK(node_dir_problem("/x\ty") == "holds a control character");
}
