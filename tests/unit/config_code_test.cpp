// SPDX-License-Identifier: Apache-2.0
// The `code` section of the experiment file and of the site defaults, and the sizes it takes.
#include <catch2/catch.hpp>

#include <string>

#include "dlx/common/byte_size.hpp"
#include "dlx/config/parse.hpp"
#include "dlx/config/site.hpp"
#include "dlx/config/snapshot.hpp"

using dlx::config::CodeConfig;
using dlx::config::ConfigError;
using dlx::config::parse_experiment;

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

}  // namespace

TEST_CASE("byte sizes: decimal and binary units, whole numbers only", "[config][code]") {
  CHECK(dlx::parse_byte_size("4096") == 4096u);
  CHECK(dlx::parse_byte_size("100MB") == 100'000'000u);
  CHECK(dlx::parse_byte_size("100 MB") == 100'000'000u);
  CHECK(dlx::parse_byte_size("2kB") == 2000u);
  CHECK(dlx::parse_byte_size("200MiB") == 200u * 1024 * 1024);
  CHECK(dlx::parse_byte_size("1GiB") == 1024u * 1024 * 1024);
  CHECK(dlx::parse_byte_size("3G") == std::nullopt);  // ambiguous: refused
  CHECK(dlx::parse_byte_size("1.5GB") == std::nullopt);
  CHECK(dlx::parse_byte_size("MB") == std::nullopt);
  CHECK(dlx::parse_byte_size("-1MB") == std::nullopt);
  CHECK(dlx::parse_byte_size("20000000000TB") == std::nullopt);  // past 64 bits
  CHECK(dlx::format_byte_size(512) == "512 B");
  CHECK(dlx::format_byte_size(10'485'760) == "10.5 MB");
  CHECK(dlx::format_byte_size(250'000'000) == "250 MB");
}

TEST_CASE("code: defaults, every key, and the frozen snapshot keeps them", "[config][code]") {
  auto plain = parse_experiment(kBase, "exp.yaml");
  CHECK(plain.code.snapshot);
  CHECK_FALSE(plain.code.dir);
  CHECK(plain.code.max_size == 100'000'000u);
  CHECK(plain.code.run_from == CodeConfig::RunFrom::node_local);
  CHECK(plain.code.keep_outputs == 1'000'000'000u);

  auto set = parse_experiment(
      kBase + "code: {snapshot: false, dir: ../src, max_size: 200MB, run_from: shared, keep_outputs: 5GiB}\n",
      "exp.yaml");
  CHECK(set.code.keep_outputs == 5ull << 30);
  CHECK_FALSE(set.code.snapshot);
  CHECK(set.code.dir == "../src");
  CHECK(set.code.max_size == 200'000'000u);
  CHECK(set.code.run_from == CodeConfig::RunFrom::shared);

  auto again = parse_experiment(dlx::config::to_yaml(set), "experiment.yaml");
  CHECK_FALSE(again.code.snapshot);
  CHECK(again.code.dir == "../src");
  CHECK(again.code.max_size == 200'000'000u);
  CHECK(again.code.run_from == CodeConfig::RunFrom::shared);
  CHECK(again.code.keep_outputs == 5ull << 30);

  CHECK(parse_experiment(kBase + "code: {keep_outputs: false}\n", "exp.yaml").code.keep_outputs == 0u);
  CHECK(parse_experiment(kBase + "code: {keep_outputs: 0}\n", "exp.yaml").code.keep_outputs == 0u);
  CHECK(parse_experiment(kBase + "code: {keep_outputs: true}\n", "exp.yaml").code.keep_outputs == 1'000'000'000u);
  auto none = parse_experiment(kBase + "code: {keep_outputs: false}\n", "exp.yaml");
  CHECK(parse_experiment(dlx::config::to_yaml(none), "experiment.yaml").code.keep_outputs == 0u);
}

TEST_CASE("code: each mistake names the key, the value and the fix", "[config][code]") {
  auto message = error_of(kBase + "code: {max_size: 1.5GB}\n");
  CHECK_THAT(message, Catch::Contains("exp.yaml:4"));
  CHECK_THAT(message, Catch::Contains("code.max_size"));
  CHECK_THAT(message, Catch::Contains("'1.5GB' is not a size"));
  CHECK_THAT(message, Catch::Contains("100MB, 250MiB or 1GB"));

  message = error_of(kBase + "code: {max_size: 0}\n");
  CHECK_THAT(message, Catch::Contains("must be above 0"));
  CHECK_THAT(message, Catch::Contains("snapshot: false"));

  message = error_of(kBase + "code: {max_size: [1]}\n");
  CHECK_THAT(message, Catch::Contains("expected a size"));

  message = error_of(kBase + "code: {snapshot: maybe}\n");
  CHECK_THAT(message, Catch::Contains("code.snapshot"));
  CHECK_THAT(message, Catch::Contains("true or false"));

  message = error_of(kBase + "code: {run_from: shard}\n");
  CHECK_THAT(message, Catch::Contains("code.run_from"));
  CHECK_THAT(message, Catch::Contains("did you mean 'shared'"));

  message = error_of(kBase + "code: {dir: ''}\n");
  CHECK_THAT(message, Catch::Contains("code.dir"));
  CHECK_THAT(message, Catch::Contains("is empty"));

  message = error_of(kBase + "code: {snapshots: false}\n");
  CHECK_THAT(message, Catch::Contains("snapshots"));
  CHECK_THAT(message, Catch::Contains("snapshot"));

  message = error_of(kBase + "code: {keep_outputs: lots}\n");
  CHECK_THAT(message, Catch::Contains("exp.yaml:4"));
  CHECK_THAT(message, Catch::Contains("code.keep_outputs: 'lots' is not a size (write a size such as 1GB or 200MiB, "
                                      "or false to keep none of the files"));
  message = error_of(kBase + "code: {keep_outputs: {max: 1GB}}\n");
  CHECK_THAT(message, Catch::Contains("code.keep_outputs: expected a size or false, got a list or mapping"));

  message = error_of(kBase + "code: false\n");
  CHECK_THAT(message, Catch::Contains("expected a mapping"));
}

TEST_CASE("site defaults: code.max_size, run_from and keep_outputs, overridden by the experiment", "[config][code]") {
  auto site = dlx::config::parse_site_config("defaults:\n  code: {max_size: 50MiB, run_from: shared}\n", "site.yaml");
  CHECK(site.code.max_size == 50u * 1024 * 1024);
  auto experiment = parse_experiment(kBase, "exp.yaml", &site);
  CHECK(experiment.code.max_size == 50u * 1024 * 1024);
  CHECK(experiment.code.run_from == CodeConfig::RunFrom::shared);
  auto raised = parse_experiment(kBase + "code: {max_size: 200MB}\n", "exp.yaml", &site);
  CHECK(raised.code.max_size == 200'000'000u);
  CHECK(raised.code.run_from == CodeConfig::RunFrom::shared);

  auto small = dlx::config::parse_site_config("defaults:\n  code: {keep_outputs: 100MB}\n", "site.yaml");
  CHECK(parse_experiment(kBase, "exp.yaml", &small).code.keep_outputs == 100'000'000u);
  CHECK(parse_experiment(kBase + "code: {keep_outputs: true}\n", "exp.yaml", &small).code.keep_outputs ==
        100'000'000u);
  CHECK(parse_experiment(kBase + "code: {keep_outputs: 2GB}\n", "exp.yaml", &small).code.keep_outputs ==
        2'000'000'000u);

  try {
    dlx::config::parse_site_config("defaults:\n  code: {dir: /src}\n", "site.yaml");
    FAIL("a site cannot name the code directory");
  } catch (const ConfigError& e) {
    CHECK_THAT(std::string(e.what()), Catch::Contains("site.yaml"));
    CHECK_THAT(std::string(e.what()), Catch::Contains("dir"));
  }
}
