// SPDX-License-Identifier: Apache-2.0
#pragma once
// sbatch's own option table, reached from the allocator context. There is no public SPANK call to
// make a submission a job array or to set its node count, so the plugin uses sbatch's exported
// `opt` and libslurmfull's slurm_option_set/isset/get (docs/architecture.md: a private ABI, tied to
// the Slurm release). Symbols are looked up at run time; when they are missing (salloc, another
// Slurm) available() is false and callers fail with a clear message instead of crashing.
#include <optional>
#include <string>

namespace dlx::spank {

class SbatchOptions {
 public:
  SbatchOptions();
  bool available() const noexcept { return opt_ != nullptr; }
  bool is_set(const char* name) const;                 // given on the command line or #SBATCH
  std::optional<std::string> get(const char* name) const;
  bool set(const char* name, const std::string& value);  // false when sbatch rejected the value

 private:
  void* opt_ = nullptr;
  int (*set_)(void*, const char*, const char*, bool) = nullptr;
  bool (*isset_)(void*, const char*) = nullptr;
  char* (*get_)(void*, const char*) = nullptr;
};

}  // namespace dlx::spank
