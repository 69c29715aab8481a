// SPDX-License-Identifier: Apache-2.0
// `dlx ckpt show|verify|ls --json` on a checkpoint whose strings are not UTF-8 (an experiment name,
// a metric name, a state value and the directory names in its path, as a trainer or a file system
// may give them): nlohmann's dump() threw type_error 316 on them, so --json printed nothing and
// dlx failed. Now each byte that is not UTF-8 is U+FFFD in one valid JSON document (parsed back
// here with nlohmann's strict parser), the rest of the value kept.
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "checkpoint_samples.hpp"
#include "dlx/checkpoint/checkpoint.hpp"
#include "run_program.hpp"
#include "test_support.hpp"

using namespace dlx::checkpoint;
using namespace dlx::checkpoint::testing;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

const std::string kReplacement = "\xef\xbf\xbd";  // U+FFFD in UTF-8

dlx::testing::ProgramOutput run_ckpt_command(const std::vector<std::string>& args, const fs::path& scratch) {
  std::vector<std::string> argv{DLX_CLI_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  return dlx::testing::run_program(argv, scratch);
}

}  // namespace

TEST_CASE("dlx ckpt --json: strings that are not UTF-8 become U+FFFD in valid JSON", "[unit][checkpoint][cli]") {
  ScratchDir dir, scratch;
  const fs::path experiment = dir.path() / "exp-\xff";  // Latin-1 or any bytes: Linux takes them
  fs::create_directories(experiment / "trials" / "7" / "checkpoints");
  std::ofstream(experiment / "experiment.yaml")
      << "name: utf8\nentrypoint: [unused]\nseed: 1\n"
         "hyperparameters:\n  x: {type: double, minval: 0, maxval: 1}\n"
         "searcher: {name: random, metric: loss, max_trials: 10}\n";
  SampleContent sample(5, 10);
  auto& metadata = sample.content().metadata;
  metadata.experiment = "caf\xe9-run";    // Latin-1 e-acute
  metadata.metric_name = "loss\xc3";      // a UTF-8 sequence cut short
  sample.content().state["note"] = std::string("\xfe\xff bytes");
  const fs::path file = checkpoint_path(experiment / "trials" / "7" / "checkpoints", 5);
  save_checkpoint(sample.content(), file);

  SECTION("show --json") {
    const auto run = run_ckpt_command({"ckpt", "show", "--json", file.string()}, scratch.path());
    INFO(run.out << run.err);
    REQUIRE(run.status == 0);
    const auto json = nlohmann::json::parse(run.out);
    CHECK(json["experiment"] == "caf" + kReplacement + "-run");
    CHECK(json["metric_name"] == "loss" + kReplacement);
    CHECK(json["state"]["note"] == kReplacement + kReplacement + " bytes");
    CHECK(json["step"] == 5);
    CHECK(json["tensors"].size() == sample.content().tensors.size());
  }
  SECTION("show, the text view") {
    const auto run = run_ckpt_command({"ckpt", "show", file.string()}, scratch.path());
    INFO(run.out << run.err);
    REQUIRE(run.status == 0);
    CHECK_THAT(run.out, Contains("# experiment       \"caf" + kReplacement + "-run\""));
    CHECK_THAT(run.out, Contains("# state.note       \"" + kReplacement + kReplacement + " bytes\""));
  }
  SECTION("verify --json: the path, valid and not") {
    const fs::path broken = experiment / "trials" / "7" / "checkpoints" / "step-6.h5";
    std::ofstream(broken) << "not HDF5";
    const auto run = run_ckpt_command({"ckpt", "verify", "--json", file.string(), broken.string()}, scratch.path());
    INFO(run.out << run.err);
    CHECK(run.status == 1);  // one of the two is not valid
    const auto json = nlohmann::json::parse(run.out);
    REQUIRE(json.size() == 2);
    CHECK(json[0]["valid"] == true);
    CHECK_THAT(json[0]["path"].get<std::string>(), Contains("exp-" + kReplacement + "/trials/7/checkpoints/step-5.h5"));
    CHECK(json[1]["valid"] == false);
    CHECK_THAT(json[1]["problem"].get<std::string>(), Contains("step-6.h5"));
  }
  SECTION("ls --json") {
    const auto run = run_ckpt_command({"ckpt", "ls", "--json", experiment.string()}, scratch.path());
    INFO(run.out << run.err);
    REQUIRE(run.status == 0);
    const auto json = nlohmann::json::parse(run.out);
    REQUIRE(json.size() == 1);
    CHECK(json[0]["trial"] == 7);
    CHECK(json[0]["step"] == 5);
    CHECK(json[0]["valid"] == true);
    CHECK_THAT(json[0]["path"].get<std::string>(), Contains("exp-" + kReplacement + "/trials/7/"));
  }
}
