// SPDX-License-Identifier: Apache-2.0
/* A C program against the installed C API (libdlx_c.so): a trial without a communicator, outside
 * Slurm, reads its hyperparameters from DLX_HPARAMS (install_test.sh sets {"lr": 0.25}). */
#include <stdio.h>

#include "dlx/c_api.h"

int main(void) {
  dlx_trial* trial = NULL;
  double lr = 0.0;
  int in_trial = 1;
  if (dlx_trial_create(DLX_TRIAL_NO_COMMUNICATOR | DLX_TRIAL_QUIET, &trial) != DLX_OK ||
      dlx_trial_in_trial(trial, &in_trial) != DLX_OK ||
      dlx_trial_hparam_double(trial, "lr", &lr) != DLX_OK) {
    printf("consumer_c: %s\n", dlx_last_error());
    dlx_trial_destroy(trial);
    return 1;
  }
  dlx_trial_destroy(trial);
  if (in_trial != 0 || lr != 0.25) {
    printf("consumer_c: in_trial %d, lr %g (expected 0 and 0.25)\n", in_trial, lr);
    return 1;
  }
  printf("consumer_c: ok (lr %g)\n", lr);
  return 0;
}
