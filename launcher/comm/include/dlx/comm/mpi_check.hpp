// SPDX-License-Identifier: Apache-2.0
#pragma once
// DLX_MPI_CHECK(call): every MPI call goes through it. The communicators it is used on have
// MPI_ERRORS_RETURN set, so a failure comes back as a code; this turns it into a CommError with
// MPI_Error_string, the call's text, file, line and host.
#include <mpi.h>

namespace dlx::comm::detail {

[[noreturn]] void throw_mpi_error(int code, const char* call, const char* file, int line);

}  // namespace dlx::comm::detail

#define DLX_MPI_CHECK(call)                                                     \
  do {                                                                          \
    const int dlx_mpi_rc_ = (call);                                             \
    if (dlx_mpi_rc_ != MPI_SUCCESS) {                                           \
      ::dlx::comm::detail::throw_mpi_error(dlx_mpi_rc_, #call, __FILE__, __LINE__); \
    }                                                                           \
  } while (false)
