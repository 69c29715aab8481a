// SPDX-License-Identifier: Apache-2.0
#pragma once
// `dlx doctor`'s checks: the Slurm settings dlx's preemption, requeue and launch paths rely on
// (docs/admin-guide.md section 2, site-config/slurm.conf.dlx), each judged from SiteFacts with
// what was found and, when it is not right, what to change.
#include <string>
#include <vector>

#include "slurm_facts.hpp"

namespace dlx::doctor {

enum class Verdict { ok, warn, fail, skipped };

struct Finding {
  Verdict verdict;
  std::string check;   // the setting or part: "RequeueExit", "partition low: GraceTime", "plugin"
  std::string found;   // what this installation has
  std::string advice;  // why it matters and what to do; empty when ok
};

// The seconds dlx-launch waits for the notice checkpoint by default (DLX_EXIT_DEADLINE_S).
inline constexpr long kDefaultExitDeadlineSeconds = 30;

std::vector<Finding> check_site(const SiteFacts& facts);

const char* verdict_name(Verdict verdict);

}  // namespace dlx::doctor
