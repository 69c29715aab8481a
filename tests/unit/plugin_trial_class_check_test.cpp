// SPDX-License-Identifier: Apache-2.0
// The allocator's look at a Determined Trial class before anything is queued
// (spank-plugin/trial_class_check.hpp): TFKerasTrial, EstimatorTrial and DeepSpeedTrial are
// refused with what to use instead, and so is a class of Determined's model hub; PyTorchTrial,
// classes defined elsewhere and modules that are
// not in the start directory pass (the harness decides in the trial).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include "searcher_temp_dir.hpp"
#include "trial_class_check.hpp"

using dlx::spank::check_trial_class;
using dlx::spank::unsupported_trial_base;

TEST_CASE("a class deriving from a Trial API dlx cannot run is named with its line", "[plugin][determined]") {
  const std::string source =
      "import determined.keras as keras\n"
      "\n"
      "class Helper:\n"
      "    pass\n"
      "\n"
      "class MNistTrial(keras.TFKerasTrial):\n"
      "    def __init__(self, context):\n"
      "        pass\n";
  const auto found = unsupported_trial_base(source, "MNistTrial");
  REQUIRE(found);
  CHECK(found->line == 6);
  CHECK(found->what == "a TensorFlow/Keras trial (det.keras.TFKerasTrial)");
  CHECK(found->instead.find("det.pytorch.PyTorchTrial") != std::string::npos);

  const auto deepspeed = unsupported_trial_base("class T(\n    det.pytorch.deepspeed.DeepSpeedTrial,\n):\n", "T");
  REQUIRE(deepspeed);
  CHECK(deepspeed->line == 1);
  CHECK(deepspeed->what.find("DeepSpeed") != std::string::npos);
  const auto estimator = unsupported_trial_base("x = 1\n  class Est(EstimatorTrial) :\n", "Est");
  REQUIRE(estimator);
  CHECK(estimator->line == 2);
}

TEST_CASE("PyTorchTrial, other classes and look-alike names pass", "[plugin][determined]") {
  CHECK_FALSE(unsupported_trial_base("class MNistTrial(det.pytorch.PyTorchTrial):\n", "MNistTrial"));
  // Another class of the file derives from TFKerasTrial: not the one the entrypoint names.
  CHECK_FALSE(unsupported_trial_base("class Other(TFKerasTrial):\nclass Mine(PyTorchTrial):\n", "Mine"));
  // A longer name is no match, for the class nor for the base.
  CHECK_FALSE(unsupported_trial_base("class MineToo(TFKerasTrial):\n", "Mine"));
  CHECK_FALSE(unsupported_trial_base("class Mine(MyTFKerasTrialLike):\n", "Mine"));
  // Defined elsewhere and imported: the harness decides in the trial.
  CHECK_FALSE(unsupported_trial_base("from .trials import Mine\n", "Mine"));
}

TEST_CASE("the module is read from the directory the trials start in", "[plugin][determined]") {
  dlx::testing::TempDir temp;
  const std::filesystem::path root = temp.path;
  std::filesystem::create_directories(root / "models" / "vision");
  std::ofstream(root / "models" / "vision" / "__init__.py") << "class Net(det.keras.TFKerasTrial):\n    pass\n";
  std::ofstream(root / "model_def.py") << "class Good(det.pytorch.PyTorchTrial):\n    pass\n";

  const auto refused = check_trial_class("models.vision:Net", root);
  REQUIRE(refused.refusal);
  CHECK(*refused.refusal == "entrypoint models.vision:Net is a TensorFlow/Keras trial (det.keras.TFKerasTrial) (" +
                                (root / "models" / "vision" / "__init__.py").string() +
                                ", line 1): dlx runs PyTorchTrial and Core API code: port it to "
                                "det.pytorch.PyTorchTrial, or train with TensorFlow in a script under the Core API "
                                "(det.core.init())");
  CHECK_FALSE(refused.note);

  const auto good = check_trial_class("model_def:Good", root);
  CHECK_FALSE(good.refusal);
  CHECK_FALSE(good.note);

  // Determined's model hub is named by the module alone.
  const auto hub = check_trial_class("model_hub.mmdetection:MMDetTrial", root);
  REQUIRE(hub.refusal);
  CHECK(hub.refusal->starts_with("entrypoint model_hub.mmdetection:MMDetTrial is a trial of Determined's model hub "
                                 "(model_hub): dlx does not provide it"));
  CHECK_FALSE(check_trial_class("model_hubby:Trial", root).refusal);

  const auto missing = check_trial_class("absent_def:Trial", root);
  CHECK_FALSE(missing.refusal);
  REQUIRE(missing.note);
  CHECK(*missing.note == "entrypoint absent_def:Trial: no absent_def.py in " + root.string() +
                             ", where the trials start: they import absent_def from their Python path");
}
