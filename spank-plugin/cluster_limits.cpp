#include "cluster_limits.hpp"

#include <dlfcn.h>

extern "C" {
#include <slurm/slurm.h>
}

namespace dlx::spank {

std::optional<unsigned> cluster_max_array_size() {
  using Load = int (*)(time_t, slurm_conf_t**);
  using Free = void (*)(slurm_conf_t*);
  auto load = reinterpret_cast<Load>(::dlsym(RTLD_DEFAULT, "slurm_load_ctl_conf"));
  auto release = reinterpret_cast<Free>(::dlsym(RTLD_DEFAULT, "slurm_free_ctl_conf"));
  if (!load || !release) return std::nullopt;
  slurm_conf_t* conf = nullptr;
  if (load(0, &conf) != 0 || conf == nullptr) return std::nullopt;
  unsigned size = conf->max_array_sz;
  release(conf);
  return size;
}

}  // namespace dlx::spank
