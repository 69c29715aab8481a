// SPDX-License-Identifier: Apache-2.0
// A C++ trainer's first lines against the installed SDK, without a trial: the public headers
// (dlx/trial.hpp includes the rest) compile on their own, and hyperparameters are read with the
// SDK's strict conversions, whose errors (a dlx exception thrown inside libdlx.so) are caught.
#include <cstdio>

#include "dlx/hparams.hpp"
#include "dlx/trial.hpp"

int main() {
  const dlx::Hparams hparams(nlohmann::ordered_json::parse(R"({"lr": 0.25, "layers": 3})"));
  if (hparams.get<double>("lr") != 0.25 || hparams.get<int>("layers") != 3) {
    std::puts("consumer_cpp: wrong hyperparameter values");
    return 1;
  }
  try {
    (void)hparams.get<int>("lr");
    std::puts("consumer_cpp: 0.25 read as an int");
    return 1;
  } catch (const dlx::HparamError& error) {
    std::printf("consumer_cpp: ok (%s)\n", error.what());
  }
  return 0;
}
