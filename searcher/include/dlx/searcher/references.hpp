#pragma once
// Which checkpoints a method's future work may still load, so that retention (`dlx ckpt gc`,
// keep_latest) never deletes one: PBT starts every trial after round 0 from a checkpoint of the
// round before (its member's own, or a better member's), and the next round is planned only
// when the current one has finished, so until then any trial of it may become a parent.
#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "dlx/config/experiment.hpp"

namespace dlx::searcher {

struct CheckpointReference {
  int trial = 0;
  std::int64_t length = 0;  // the checkpoint step-<length>.h5 of that trial
  bool operator==(const CheckpointReference&) const = default;
};

// From the state of a method of `experiment` (its snapshot()), sorted by trial, without
// duplicates. PBT: the start checkpoint of every planned trial that has not finished, and the
// reported checkpoint of every trial of the latest round while a later round is still to come.
// Other methods: empty here (a paused ASHA trial resumes from its own latest checkpoint, which
// keep_latest already keeps).
std::vector<CheckpointReference> referenced_checkpoints(const config::Experiment& experiment,
                                                        const nlohmann::json& method_snapshot);

}  // namespace dlx::searcher
