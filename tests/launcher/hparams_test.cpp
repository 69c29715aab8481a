// SPDX-License-Identifier: Apache-2.0
// libdlx's typed hyperparameters and the DLX_* trial contract reader.
#include <catch2/catch.hpp>

#include <cstdio>
#include <string>
#include <vector>

#include "dlx/config/experiment.hpp"
#include "dlx/env/trial_environment.hpp"
#include "dlx/hparams.hpp"

using dlx::Hparams;
using dlx::HparamError;
using nlohmann::ordered_json;

namespace {

Hparams sample() {
  return Hparams(ordered_json::parse(
      R"({"lr":0.1,"batch_size":64,"steps":16.0,"model":"mlp","nesterov":true,"big":1e300,
          "optim.momentum":0.9,"half":0.5,"neg":-3})"));
}

}  // namespace

TEST_CASE("launcher: typed hyperparameters", "[hparams]") {
  auto h = sample();
  CHECK(h.get<double>("lr") == 0.1);
  CHECK(h.get<float>("lr") == 0.1F);
  CHECK(h.get<int>("batch_size") == 64);
  CHECK(h.get<double>("batch_size") == 64.0);  // an integer reads as a double
  CHECK(h.get<int>("steps") == 16);             // an integral float reads as an integer
  CHECK(h.get<std::int64_t>("neg") == -3);
  CHECK(h.get<std::string>("model") == "mlp");
  CHECK(h.get<bool>("nesterov"));
  CHECK(h.get<double>("optim.momentum") == 0.9);
  CHECK(h.get<double>("absent", 2.5) == 2.5);
  CHECK(h.get<int>("batch_size", 1) == 64);
  CHECK(h.contains("lr"));
  CHECK_FALSE(h.contains("absent"));
}

TEST_CASE("launcher: hyperparameter errors name the hyperparameter, the value and the type", "[hparams]") {
  auto h = sample();
  CHECK_THROWS_WITH(h.get<int>("half"),
                    "dlx: hyperparameter 'half' is 0.5: not an integer, so it cannot be read as "
                    "int");
  CHECK_THROWS_WITH(h.get<int>("big"), Catch::Contains("'big'") && Catch::Contains("int"));
  CHECK_THROWS_WITH(h.get<unsigned>("neg"), Catch::Contains("out of range"));
  CHECK_THROWS_WITH(h.get<double>("model"),
                    Catch::Contains("'model' is \"mlp\": not a number") &&
                        Catch::Contains("double"));
  CHECK_THROWS_WITH(h.get<std::string>("lr"), Catch::Contains("not a string"));
  CHECK_THROWS_WITH(h.get<bool>("batch_size"), Catch::Contains("not true or false"));
  CHECK_THROWS_AS(h.get<double>("learning_rate"), HparamError);
  CHECK_THROWS_WITH(h.get<double>("learning_rate"),
                    Catch::Contains("'learning_rate' is not set for this trial") &&
                        Catch::Contains("lr, batch_size") &&
                        Catch::Contains("hparam<double>(\"learning_rate\", ...)"));
  CHECK_THROWS_WITH(h.get<int>("model", 3), Catch::Contains("not a number"));
}

TEST_CASE("launcher: a name read with a default that the experiment lacks is a warning with the closest name",
          "[hparams]") {
  Hparams h(ordered_json::parse(R"({"batch_sise":32,"optim":{"lr":0.1}})"));
  CHECK(h.get<int>("batch_size", 64) == 64);  // no sink: the default, silently
  CHECK(h.warnings().empty());

  std::FILE* sink = std::tmpfile();
  REQUIRE(sink != nullptr);
  h.warn_on(sink);
  CHECK(h.get<int>("batch_size", 64) == 64);
  CHECK(h.get<int>("batch_size", 64) == 64);    // said once
  CHECK(h.get<double>("optim.lr", 0.5) == 0.1);  // defined: no warning
  CHECK(h.get<double>("momentum", 0.9) == 0.9);  // no close name
  const auto warnings = h.warnings();
  REQUIRE(warnings.size() == 2);
  CHECK(warnings[0] ==
        "dlx: warning: hyperparameter 'batch_size' is not defined by the experiment, so "
        "hparam<int>(\"batch_size\", ...) uses its default 64 (did you mean 'batch_sise'? the "
        "experiment defines: batch_sise, optim.lr)");
  CHECK(warnings[1] ==
        "dlx: warning: hyperparameter 'momentum' is not defined by the experiment, so "
        "hparam<double>(\"momentum\", ...) uses its default 0.9 (the experiment defines: "
        "batch_sise, optim.lr)");
  std::rewind(sink);
  std::string printed(4096, '\0');
  printed.resize(std::fread(printed.data(), 1, printed.size(), sink));
  std::fclose(sink);
  CHECK(printed == warnings[0] + "\n" + warnings[1] + "\n");
}

TEST_CASE("launcher: the trial environment", "[hparams]") {
  dlx::env::EnvMap env{{"DLX_EXPERIMENT_DIR", "/store/u/exp"},
                       {"DLX_TRIAL_ID", "12"},
                       {"DLX_HPARAMS", R"({"lr":0.1,"model":"mlp"})"},
                       {"DLX_CHECKPOINT_DIR", "/store/u/exp/trials/12/checkpoints"},
                       {"DLX_LATEST_CHECKPOINT", ""},
                       {"SLURM_ARRAY_JOB_ID", "900"},
                       {"SLURM_ARRAY_TASK_ID", "12"},
                       {"SLURM_JOB_ID", "913"},
                       {"SLURM_RESTART_COUNT", "2"}};
  auto t = dlx::env::read_trial_environment(env);
  CHECK(t.in_trial());
  CHECK(t.trial_id == 12);
  CHECK(t.hparams["model"] == "mlp");
  CHECK_FALSE(t.latest_checkpoint.has_value());  // empty means a fresh start
  CHECK(t.slurm_job_id == "900_12");
  CHECK(t.restarts == 2);
  CHECK(t.record_path() == "/store/u/exp/trials/12/trial.h5");

  env.erase("SLURM_ARRAY_JOB_ID");
  env.erase("SLURM_RESTART_COUNT");  // unset on the first run
  t = dlx::env::read_trial_environment(env);
  CHECK(t.slurm_job_id == "913");
  CHECK(t.restarts == 0);

  CHECK_FALSE(dlx::env::read_trial_environment({}).in_trial());
  CHECK_THROWS_WITH(dlx::env::read_trial_environment({{"DLX_TRIAL_ID", "a"}}),
                    Catch::Contains("DLX_TRIAL_ID=a"));
  CHECK_THROWS_WITH(dlx::env::read_trial_environment({{"DLX_HPARAMS", "[1]"}}),
                    Catch::Contains("DLX_HPARAMS is not a JSON object"));
  CHECK_THROWS_WITH(dlx::env::read_trial_environment({{"DLX_HPARAMS", R"({"lr":0.1)"}}),
                    "DLX_HPARAMS is not a JSON object of hyperparameters (write it as {\"name\": "
                    "value, \"group\": {\"name\": value}}): {\"lr\":0.1");
  // Any JSON value is a hyperparameter value now (Determined passes null, lists and mappings).
  CHECK(dlx::env::read_trial_environment({{"DLX_HPARAMS", R"({"a":[1],"b":null})"}}).hparams ==
        ordered_json::parse(R"({"a":[1],"b":null})"));
}

TEST_CASE("launcher: DLX_HPARAMS nested past the depth limit is refused by name", "[hparams]") {
  const std::string deep = R"({"a":)" + std::string(70, '[') + std::string(70, ']') + "}";
  CHECK_THROWS_WITH(dlx::env::read_trial_environment({{"DLX_HPARAMS", deep}}),
                    "DLX_HPARAMS nests objects or lists more than 64 levels deep (write the "
                    "hyperparameters as a JSON object of groups and values)");
  const std::string fits = R"({"a":)" + std::string(60, '[') + std::string(60, ']') + "}";
  CHECK_NOTHROW(dlx::env::read_trial_environment({{"DLX_HPARAMS", fits}}));
}

TEST_CASE("launcher: nested DLX_HPARAMS: groups by dotted name, a mapping value stays a value", "[hparams]") {
  const auto t = dlx::env::read_trial_environment(
      {{"DLX_HPARAMS", R"({"optim":{"lr":0.1,"momentum":0.9},"batch":64,"aug":{"flip":true},"tags":[]})"}});
  Hparams h(t.hparams);
  CHECK(h.get<double>("optim.lr") == 0.1);
  CHECK(h.get<double>("optim.momentum") == 0.9);
  CHECK(h.get<int>("batch") == 64);
  CHECK(h.get<ordered_json>("optim") == ordered_json::parse(R"({"lr":0.1,"momentum":0.9})"));
  CHECK(h.get<ordered_json>("tags") == ordered_json::array());
  CHECK(h.contains("optim"));
  CHECK_FALSE(h.contains("optim.beta"));
  CHECK_THROWS_WITH(h.get<double>("optim.beta"),
                    Catch::Contains("'optim.beta' is not set for this trial (set: optim.lr, "
                                    "optim.momentum, batch, aug.flip, tags)"));
  CHECK_THROWS_WITH(h.get<double>("optim"),
                    Catch::Contains(R"('optim' is {"lr":0.1,"momentum":0.9}: not a number)"));
  // Without the experiment's names every mapping reads as a group (outside a trial) ...
  CHECK(t.flat_hparams == ordered_json::parse(
                              R"({"optim.lr":0.1,"optim.momentum":0.9,"batch":64,"aug.flip":true,"tags":[]})"));
  // ... with them (in a trial, from the snapshot), a mapping that is a value stays one.
  dlx::config::Experiment experiment;
  for (const char* name : {"optim.lr", "optim.momentum", "batch", "aug", "tags"}) {
    dlx::config::Hyperparameter hp;
    hp.name = name;
    experiment.hyperparameters.push_back(hp);
  }
  auto named = t;
  dlx::env::use_experiment_names(named, experiment);
  CHECK(named.flat_hparams == ordered_json::parse(
                                  R"({"optim.lr":0.1,"optim.momentum":0.9,"batch":64,"aug":{"flip":true},"tags":[]})"));
}

TEST_CASE("launcher: the flat DLX_HPARAMS of earlier versions still reads", "[hparams]") {
  const auto t = dlx::env::read_trial_environment({{"DLX_HPARAMS", R"({"optim.lr":0.1,"batch":64})"}});
  Hparams h(t.hparams);
  CHECK(h.get<double>("optim.lr") == 0.1);
  CHECK(t.flat_hparams == ordered_json::parse(R"({"optim.lr":0.1,"batch":64})"));
}

TEST_CASE("launcher: a defined name never read is a warning naming the default the trainer took instead",
          "[hparams]") {
  Hparams h(ordered_json::parse(R"({"batch_sise":32,"optim":{"lr":0.1,"momentum":0.9},"seed":3})"));
  std::vector<Hparams::NameWarning> said;
  h.warn_on(nullptr);
  h.on_warning([&](const Hparams::NameWarning& warning) { said.push_back(warning); });
  CHECK(h.get<int>("batch_size", 64) == 64);
  CHECK(h.get<ordered_json>("optim").size() == 2);  // a group read whole: its members count as read
  h.check_unread();
  h.check_unread();  // said once
  REQUIRE(said.size() == 3);
  CHECK(said[0].kind == "default");
  CHECK(said[0].name == "batch_size");
  CHECK(said[1].kind == "unread");
  CHECK(said[1].name == "batch_sise");
  CHECK(said[1].message ==
        "dlx: warning: the experiment defines hyperparameter 'batch_sise', which this trial has not read: did you "
        "mean 'batch_size', which it asked for and got the default 64?");
  CHECK(said[2].name == "seed");
  CHECK(said[2].message == "dlx: warning: the experiment defines hyperparameter 'seed', which this trial has not "
                           "read (remove it from the experiment, or read it: hparam<T>(\"seed\"))");
  CHECK(h.warnings().size() == 3);

  // json() hands the trainer every value: then nothing is unread.
  Hparams whole(ordered_json::parse(R"({"a":1,"b":2})"));
  whole.warn_on(nullptr);
  CHECK(whole.json().size() == 2);
  whole.check_unread();
  CHECK(whole.warnings().empty());

  // A trainer that reads no name through dlx reads DLX_HP_<NAME> or DLX_HPARAMS, which dlx cannot
  // see: no warning about every name it does read.
  Hparams elsewhere(ordered_json::parse(R"({"a":1,"b":2})"));
  elsewhere.warn_on(nullptr);
  elsewhere.check_unread();
  CHECK(elsewhere.warnings().empty());
  // One read through dlx is enough to check the rest.
  CHECK(elsewhere.get<int>("a") == 1);
  elsewhere.check_unread();
  REQUIRE(elsewhere.warnings().size() == 1);
  CHECK_THAT(elsewhere.warnings()[0], Catch::Matchers::Contains("hyperparameter 'b', which this trial has not read"));
}
