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

}  // namespace dlx::spank
