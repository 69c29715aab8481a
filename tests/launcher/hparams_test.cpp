// libdlx's typed hyperparameters and the DLX_* trial contract reader.
#include <catch2/catch.hpp>

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
  CHECK_THROWS_WITH(dlx::env::read_trial_environment({{"DLX_HPARAMS", R"({"a":[1]})"}}),
                    Catch::Contains("'a' must be a number, string or boolean"));
}
