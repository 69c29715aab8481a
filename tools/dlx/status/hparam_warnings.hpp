// SPDX-License-Identifier: Apache-2.0
#pragma once
// The trials' hyperparameter name warnings (trial.h5's hparam_warnings), merged for the lines
// under `dlx status`'s table and for `dlx report`:
//   - each distinct warning once, with the trials that said it: "trials 0-3: hyperparameter
//     'batch_size' is not defined by the experiment, so ... (did you mean 'batch_sise'? ...)";
//   - defaults the trainer used for names the experiment does not define, with no defined name
//     close to them (no "did you mean"), several used by the same trials: one line naming them
//     ("trials 0-3: the trainer used its own defaults for 7 hyperparameters ...: l2, seed, ...");
//   - a name the experiment defines that every finished trial (its record no longer running)
//     left unread, as one line instead of one per trial: "hyperparameter 'batch_sise' is defined
//     but never read by any trial (4 finished)".
#include <string>
#include <vector>

namespace dlx::cli {

struct TrialRow;

// The lines, without "# " or a newline, in the order the warnings first appear.
std::vector<std::string> hparam_warning_lines(const std::vector<TrialRow>& rows);

}  // namespace dlx::cli
