// SPDX-License-Identifier: Apache-2.0
#include "sbatch_options.hpp"

#include <dlfcn.h>

namespace dlx::spank {

namespace {

template <typename Function>
Function lookup(const char* symbol) {
  return reinterpret_cast<Function>(::dlsym(RTLD_DEFAULT, symbol));
}

}  // namespace

SbatchOptions::SbatchOptions() {
  // `sbopt` exists only in sbatch: salloc and srun also export `opt` with another meaning.
  if (::dlsym(RTLD_DEFAULT, "sbopt") == nullptr) return;
  set_ = lookup<decltype(set_)>("slurm_option_set");
  isset_ = lookup<decltype(isset_)>("slurm_option_isset");
  get_ = lookup<decltype(get_)>("slurm_option_get");
  if (set_ && isset_ && get_) opt_ = ::dlsym(RTLD_DEFAULT, "opt");
}

bool SbatchOptions::is_set(const char* name) const { return available() && isset_(opt_, name); }

std::optional<std::string> SbatchOptions::get(const char* name) const {
  if (!available()) return std::nullopt;
  char* value = get_(opt_, name);
  if (value == nullptr) return std::nullopt;
  std::string copy(value);
  // xstrdup'd by Slurm: xmalloc keeps a header before the pointer, so only slurm_xfree_ptr may
  // release it; without it the few bytes are left to the exiting sbatch.
  if (auto release = lookup<void (*)(void*)>("slurm_xfree_ptr")) release(value);
  return copy;
}

bool SbatchOptions::set(const char* name, const std::string& value) {
  return available() && set_(opt_, name, value.c_str(), false) == 0;
}

}  // namespace dlx::spank
