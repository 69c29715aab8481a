// SPDX-License-Identifier: Apache-2.0
#include "dlx/slurm/hostlist.hpp"

#include <cstdlib>
#include <memory>
#include <string>

#include <fmt/format.h>
#include <slurm/slurm.h>

#include "dlx/env/environment.hpp"

#ifdef DLX_WEAK_MPI_AND_SLURM
#pragma weak slurm_hostlist_create
#endif

namespace dlx::slurm {

namespace {

struct HostlistDeleter {
  void operator()(hostlist* list) const noexcept { slurm_hostlist_destroy(list); }
};
struct FreeDeleter {
  void operator()(char* text) const noexcept { std::free(text); }  // NOLINT: libslurm mallocs
};

}  // namespace

std::string first_host(std::string_view variable, std::string_view nodelist) {
  const std::string text(nodelist);
  std::unique_ptr<hostlist, HostlistDeleter> list(slurm_hostlist_create(text.c_str()));
  if (!list) {
    throw env::EnvError(fmt::format("{}={} is not a Slurm host list", variable, nodelist));
  }
  std::unique_ptr<char, FreeDeleter> host(slurm_hostlist_shift(list.get()));
  if (!host || *host == '\0') {
    throw env::EnvError(fmt::format("{}={} names no host", variable, nodelist));
  }
  return std::string(host.get());
}

bool hostlist_library_present() noexcept {
#ifdef DLX_WEAK_MPI_AND_SLURM
  return &slurm_hostlist_create != nullptr;
#else
  return true;
#endif
}

}  // namespace dlx::slurm
