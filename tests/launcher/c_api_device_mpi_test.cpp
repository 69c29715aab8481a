// SPDX-License-Identifier: Apache-2.0
// The C API's device allreduce (dlx_trial_allreduce_device and _async) under mpirun -n 2, through
// libdlx_c.so as a C program or Python loads it, outside a dlx trial (nothing is written). With
// Debian's Open MPI (not CUDA-aware) and no GPU, the trial's backend is MPI: device pointers are
// refused with DLX_ERROR_COMM and the reason, on every rank, before a byte is read (the "GPU"
// memory is PROT_NONE pages); bad arguments are refused as for host tensors.
#include <catch2/catch.hpp>  // its implementation: tests/catch_runner.cpp

#include <sys/mman.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "catch_session.hpp"
#include "dlx/c_api.h"

namespace {
dlx_trial* g_trial = nullptr;
}

TEST_CASE("device pointers on the MPI backend: DLX_ERROR_COMM with why, nothing read", "[mpi]") {
  constexpr std::size_t kBytes = 1 << 16;
  void* gpu = ::mmap(nullptr, kBytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(gpu != MAP_FAILED);
  const dlx_tensor device[2] = {{gpu, 100, DLX_FLOAT32},
                                {static_cast<char*>(gpu) + 4096, 7, DLX_INT64}};
  CHECK(dlx_trial_allreduce_device(g_trial, device, 2, nullptr) == DLX_ERROR_COMM);
  const std::string why = dlx_last_error();
  CHECK_THAT(why, Catch::Contains("a tensor in GPU memory was given to the mpi backend, which "
                                  "cannot sum it: "));
  // Why: this Open MPI, or (in a build without CUDA) dlx itself.
  const auto not_cuda_aware = Catch::Contains("this Open MPI is not CUDA-aware");
  const auto no_cuda = Catch::Contains("this dlx was built without CUDA");
  CHECK_THAT(why, not_cuda_aware || no_cuda);
  CHECK_THAT(why, Catch::Contains("Use the NCCL backend"));
  dlx_request* request = reinterpret_cast<dlx_request*>(&g_trial);  // must be reset to NULL
  CHECK(dlx_trial_allreduce_device_async(g_trial, device, 2, nullptr, &request) == DLX_ERROR_COMM);
  CHECK(request == nullptr);
  CHECK_THAT(std::string(dlx_last_error()), Catch::Contains("which cannot sum it"));
  ::munmap(gpu, kBytes);
}

TEST_CASE("the device calls check their arguments as the host calls do", "[mpi]") {
  const dlx_tensor bad_type{reinterpret_cast<void*>(0x1000), 4, 42};
  CHECK(dlx_trial_allreduce_device(g_trial, &bad_type, 1, nullptr) == DLX_ERROR_INVALID_ARGUMENT);
  CHECK_THAT(std::string(dlx_last_error()), Catch::Contains("tensor 0 has unknown dtype 42"));
  CHECK(dlx_trial_allreduce_device(g_trial, nullptr, 1, nullptr) == DLX_ERROR_INVALID_ARGUMENT);
  CHECK_THAT(std::string(dlx_last_error()), Catch::Contains("tensors is NULL"));
  const dlx_tensor no_data{nullptr, 4, DLX_FLOAT32};
  CHECK(dlx_trial_allreduce_device_async(g_trial, &no_data, 1, nullptr, nullptr) ==
        DLX_ERROR_INVALID_ARGUMENT);
  CHECK(dlx_trial_allreduce_device(nullptr, &no_data, 0, nullptr) == DLX_ERROR_INVALID_ARGUMENT);
}

TEST_CASE("after a refusal the host collectives still work on every rank", "[mpi]") {
  std::int64_t value = 1;
  const dlx_tensor host{&value, 1, DLX_INT64};
  REQUIRE(dlx_trial_allreduce(g_trial, &host, 1) == DLX_OK);
  CHECK(value == 2);  // mpirun -n 2
}

int main(int argc, char** argv) {
  if (dlx_trial_create(DLX_TRIAL_QUIET, &g_trial) != DLX_OK) {
    std::fprintf(stderr, "c_api_device_mpi_test: %s\n", dlx_last_error());
    return 1;
  }
  std::int32_t failed = dlx::testing::run_catch_session(argc, argv) == 0 ? 0 : 1;
  const dlx_tensor any{&failed, 1, DLX_INT32};
  if (dlx_trial_allreduce(g_trial, &any, 1) != DLX_OK) failed = 1;
  dlx_trial_destroy(g_trial);
  return failed != 0 ? 1 : 0;
}
