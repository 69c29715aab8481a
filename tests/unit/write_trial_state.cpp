// SPDX-License-Identifier: Apache-2.0
// Writes a trial.h5 with a given state (and Slurm job id) for the `dlx logs` test
// (dlx_logs_test.py): usage: dlx_write_trial_state PATH STATE [SLURM_JOB_ID]
#include <exception>
#include <iostream>
#include <string>

#include "dlx/record/trial_record.hpp"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: dlx_write_trial_state PATH STATE [SLURM_JOB_ID]\n";
    return 2;
  }
  try {
    dlx::record::TrialRecord record;
    record.experiment = "logreg-grid";
    record.state = argv[2];
    if (argc > 3) record.slurm_job_id = argv[3];
    dlx::record::save_trial_record(record, argv[1]);
  } catch (const std::exception& error) {
    std::cerr << error.what() << "\n";
    return 1;
  }
  return 0;
}
