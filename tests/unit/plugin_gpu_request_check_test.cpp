// SPDX-License-Identifier: Apache-2.0
// The allocator's look at a trial's GPUs (spank-plugin/gpu_request_check.hpp): nodes' generic
// resource lists as slurmctld prints them, and the refusal of a request no node can hold, worded
// for the key the user wrote (dlx's gpus_per_node, Determined's slots_per_trial, shards).
// The cluster tests show the same against real Slurm: cluster.bad_input (no GPUs), cluster.gpu_shards.
#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <vector>

#include "dlx/config/parse.hpp"
#include "gpu_request_check.hpp"

using dlx::spank::gres_count;
using dlx::spank::NodeGres;
using dlx::spank::unplaceable_gpu_request;

namespace {

dlx::config::Experiment experiment_with(const std::string& resources) {
  return dlx::config::parse_experiment("name: a\nentrypoint: python3 train.py\n"
                                       "searcher: {name: single, metric: loss, max_length: {batches: 10}}\n"
                                       "resources: " + resources + "\n",
                                       "exp.yaml");
}

const std::vector<NodeGres> kCpuNodes{{"n1", ""}, {"n2", "(null)"}};
const std::vector<NodeGres> kTwoGpuNodes{{"n1", "gpu:2,shard:8"}, {"n2", "gpu:tesla:1(S:0)"}};

}  // namespace

TEST_CASE("a node's generic resources, counted by name", "[plugin][gpu]") {
  CHECK(gres_count("", "gpu") == 0);
  CHECK(gres_count("(null)", "gpu") == 0);
  CHECK(gres_count("gpu:4", "gpu") == 4);
  CHECK(gres_count("gpu:a100:4(S:0-1)", "gpu") == 4);
  CHECK(gres_count("gpu:a100:2(S:0),gpu:v100:2(S:1)", "gpu") == 4);  // types add up
  CHECK(gres_count("gpu:a100:2(S:0,2),shard:a100:32(S:0,2)", "gpu") == 2);  // a comma inside (S:...)
  CHECK(gres_count("gpu:a100:2(S:0,2),shard:a100:32(S:0,2)", "shard") == 32);
  CHECK(gres_count("gpu", "gpu") == 1);        // Gres=gpu: one
  CHECK(gres_count("gpu:h100", "gpu") == 1);   // a type without a count: one
  CHECK(gres_count("mps:400,gpus:2", "gpu") == 0);  // another name, not a prefix
  CHECK(gres_count("bandwidth:lustre:4G,gpu:8", "bandwidth") == 4LL * 1024 * 1024 * 1024);
  CHECK(gres_count("gpu:a100:lots", "gpu") == std::nullopt);  // unreadable: the check says nothing
  CHECK(gres_count("gpu:-1", "gpu") == std::nullopt);
}

TEST_CASE("a GPU request no node can hold is refused with the key the user wrote", "[plugin][gpu]") {
  // dlx's own key on a cluster without GPUs, and with too few.
  CHECK(unplaceable_gpu_request(experiment_with("{gpus_per_node: 1}"), kCpuNodes) ==
        "resources.gpus_per_node: 1 asks for 1 GPU on each node, but no node of this cluster has a GPU: remove "
        "gpus_per_node for a CPU trial (resources: {tasks_per_node: N} for N processes), or submit to a cluster "
        "with GPUs");
  CHECK(unplaceable_gpu_request(experiment_with("{gpus_per_node: 3}"), kTwoGpuNodes) ==
        "resources.gpus_per_node: 3 asks for 3 GPUs on each node, but the most one node of this cluster has is 2 "
        "(n1): use gpus_per_node: 2 or fewer; a trial of more GPUs spans nodes (nodes_per_trial)");
  // Determined's slots_per_trial counts GPUs: the fix says so.
  CHECK(unplaceable_gpu_request(experiment_with("{slots_per_trial: 2}"), kCpuNodes) ==
        "resources.slots_per_trial: 2 asks for 2 GPUs on one node, but no node of this cluster has a GPU: dlx reads "
        "slots as GPUs: use slots_per_trial: 0 for a CPU trial, or resources: {tasks_per_node: N} for N CPU "
        "processes");
  CHECK(unplaceable_gpu_request(experiment_with("{slots_per_trial: 4}"), kTwoGpuNodes) ==
        "resources.slots_per_trial: 4 asks for 4 GPUs on one node, but the most one node of this cluster has is 2 "
        "(n1): use slots_per_trial: 2 or fewer, or a multiple of 2 with slurm: {slots_per_node: 2} to spread the "
        "trial over nodes");
  // Shards (trials_per_gpu with shards_per_gpu) on nodes without gres/shard.
  CHECK(unplaceable_gpu_request(experiment_with("{gpus_per_node: 1, trials_per_gpu: 2, shards_per_gpu: 4}"),
                                {{"n1", "gpu:2"}}) ==
        "resources.shards_per_gpu: 4 with trials_per_gpu: 2 asks for 2 shards (gres/shard) on each node, but no "
        "node of this cluster has a shard: remove shards_per_gpu: trials_per_gpu then shares the GPUs of one array "
        "task");
}

TEST_CASE("what some node can hold, or the check cannot judge, is left to Slurm", "[plugin][gpu]") {
  CHECK(unplaceable_gpu_request(experiment_with("{gpus_per_node: 2}"), kTwoGpuNodes) == std::nullopt);
  CHECK(unplaceable_gpu_request(experiment_with("{slots_per_trial: 1}"), kTwoGpuNodes) == std::nullopt);
  CHECK(unplaceable_gpu_request(experiment_with("{gpus_per_node: 1, trials_per_gpu: 2, shards_per_gpu: 4}"),
                                kTwoGpuNodes) == std::nullopt);
  // No GPUs asked for: nothing to say, whatever the nodes.
  CHECK(unplaceable_gpu_request(experiment_with("{tasks_per_node: 2}"), kCpuNodes) == std::nullopt);
  CHECK(unplaceable_gpu_request(experiment_with("{slots_per_trial: 0}"), kCpuNodes) == std::nullopt);
  // slurmctld not asked or not answering (no nodes), or a node's list unreadable: no refusal.
  CHECK(unplaceable_gpu_request(experiment_with("{gpus_per_node: 8}"), {}) == std::nullopt);
  CHECK(unplaceable_gpu_request(experiment_with("{gpus_per_node: 8}"), {{"n1", "gpu:2"}, {"n2", "gpu:x:y:z"}}) ==
        std::nullopt);
}
