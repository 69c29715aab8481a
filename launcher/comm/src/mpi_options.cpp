// SPDX-License-Identifier: Apache-2.0
#include "dlx/comm/mpi_options.hpp"

#include <cstdlib>
#include <string_view>

#include <fmt/format.h>

#include "dlx/comm/comm_error.hpp"

namespace dlx::comm {

MpiOptions mpi_options_from_environment() {
  MpiOptions options;
  const char* raw = std::getenv("DLX_FUSION_SHM");
  const std::string_view value = raw == nullptr ? std::string_view() : std::string_view(raw);
  if (value.empty() || value == "1") return options;
  if (value == "0") {
    options.shared_memory_fusion = false;
    return options;
  }
  throw CommError("dlx", 0,
                  fmt::format("DLX_FUSION_SHM={}: expected 1 (sum fusion buckets through shared "
                              "memory when all ranks share a node; the default) or 0 (pack them "
                              "and call MPI_Allreduce)",
                              value));
}

}  // namespace dlx::comm
