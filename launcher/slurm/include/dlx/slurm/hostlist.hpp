// SPDX-License-Identifier: Apache-2.0
#pragma once
// Slurm host lists ("n[1-3],gpu07") expanded by libslurm itself (slurm_hostlist_*): dlx never
// parses the syntax by hand.
#include <string>
#include <string_view>

namespace dlx::slurm {

// The first host of `nodelist`; throws env::EnvError naming `variable` when libslurm rejects it
// or the list is empty.
std::string first_host(std::string_view variable, std::string_view nodelist);

// Whether libslurm is in the process: always in dlx's programs and libraries; not necessarily for
// the portable libdlx_c inside a container image (cmake/DlxPortableC.cmake), which references
// it weakly and then leaves what needs it (the first node, dlx-launch's) unknown.
bool hostlist_library_present() noexcept;

}  // namespace dlx::slurm
