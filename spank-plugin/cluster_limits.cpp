// SPDX-License-Identifier: Apache-2.0
#include "cluster_limits.hpp"

#include <dlfcn.h>

extern "C" {
#include <slurm/slurm.h>
}

namespace dlx::spank {

ClusterFacts load_cluster_facts() {
  using Load = int (*)(time_t, slurm_conf_t**);
  using Free = void (*)(slurm_conf_t*);
  auto load = reinterpret_cast<Load>(::dlsym(RTLD_DEFAULT, "slurm_load_ctl_conf"));
  auto release = reinterpret_cast<Free>(::dlsym(RTLD_DEFAULT, "slurm_free_ctl_conf"));
  ClusterFacts facts;
  if (!load || !release) return facts;
  slurm_conf_t* conf = nullptr;
  if (load(0, &conf) != 0 || conf == nullptr) return facts;
  facts.max_array_size = conf->max_array_sz;
  if (conf->tmp_fs != nullptr) facts.tmp_fs = conf->tmp_fs;
  release(conf);
  return facts;
}

std::vector<NodeGres> load_node_gres() {
  using Load = int (*)(time_t, node_info_msg_t**, uint16_t);
  using Free = void (*)(node_info_msg_t*);
  auto load = reinterpret_cast<Load>(::dlsym(RTLD_DEFAULT, "slurm_load_node"));
  auto release = reinterpret_cast<Free>(::dlsym(RTLD_DEFAULT, "slurm_free_node_info_msg"));
  std::vector<NodeGres> nodes;
  if (!load || !release) return nodes;
  node_info_msg_t* message = nullptr;
  if (load(0, &message, SHOW_ALL | SHOW_FUTURE) != 0 || message == nullptr) return nodes;
  nodes.reserve(message->record_count);
  for (uint32_t i = 0; i < message->record_count; ++i) {
    const node_info_t& node = message->node_array[i];
    if (node.name == nullptr) continue;  // a hole in the node table
    nodes.push_back(NodeGres{node.name, node.gres != nullptr ? node.gres : ""});
  }
  release(message);
  return nodes;
}

}  // namespace dlx::spank
