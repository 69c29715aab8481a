// SPDX-License-Identifier: Apache-2.0
#pragma once
// Which checkpoints the searcher's future work may still load, so that retention (each trial's
// own after every save, and `dlx ckpt gc`) never deletes one:
//   - PBT starts every trial after round 0 from a checkpoint of the round before (its member's
//     own, or a better member's: an exploit), and the next round is planned only when the current
//     one has finished, so until then any reported trial of it may become a parent.
//   - ASHA (and adaptive ASHA) pauses a trial at a rung; a later promotion resumes it from the
//     checkpoint at the length it paused at.
// Each reference carries a reason for people (`dlx ckpt ls` prints "referenced by searcher: ...").
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "dlx/config/experiment.hpp"

namespace dlx::searcher {

class SearchState;

struct CheckpointReference {
  CheckpointReference(int trial_id, std::int64_t step, std::string reason = {})
      : trial(trial_id), length(step), why(std::move(reason)) {}

  int trial = 0;
  std::int64_t length = 0;  // the checkpoint step-<length>.h5 of that trial
  std::string why;          // e.g. "PBT round 1: trial 3 starts from it"
  // The same checkpoint whatever the reason.
  bool operator==(const CheckpointReference& other) const {
    return trial == other.trial && length == other.length;
  }
};

// From the state of a method of `experiment` (its snapshot()), sorted by trial and length,
// without duplicates (the first reason of a checkpoint wins). PBT: the start checkpoint of every
// planned trial that has not finished, and the reported checkpoint of every trial of the latest
// round while a later round is still to come. Other methods: empty.
std::vector<CheckpointReference> referenced_checkpoints(const config::Experiment& experiment,
                                                        const nlohmann::json& method_snapshot);

// Everything the searcher's state still needs: the method's references above, plus the
// checkpoint of every paused trial at the length it last reported (ASHA promotions resume it).
std::vector<CheckpointReference> referenced_checkpoints(const SearchState& state);

// The steps of one trial among `references`, with their reasons (what retention takes).
std::map<std::int64_t, std::string> referenced_steps_of(
    const std::vector<CheckpointReference>& references, int trial);

}  // namespace dlx::searcher
