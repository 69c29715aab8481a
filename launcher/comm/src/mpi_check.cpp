// SPDX-License-Identifier: Apache-2.0
#include "dlx/comm/mpi_check.hpp"

#include <array>
#include <string>

#include "dlx/comm/comm_error.hpp"

namespace dlx::comm::detail {

void throw_mpi_error(int code, const char* call, const char* file, int line) {
  std::array<char, MPI_MAX_ERROR_STRING> text{};
  int length = 0;
  std::string error_string = "unknown MPI error";
  if (MPI_Error_string(code, text.data(), &length) == MPI_SUCCESS && length > 0) {
    error_string.assign(text.data(), static_cast<std::size_t>(length));
  }
  throw CommError("MPI", code, describe_failure("MPI", code, error_string, call, file, line));
}

}  // namespace dlx::comm::detail
