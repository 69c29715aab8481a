// SPDX-License-Identifier: Apache-2.0
// dlx::Trial's collectives under mpirun -n 2 / -n 3 (outside a dlx trial: nothing is written):
// broadcast of initial parameters, the fused allreduce of a gradient list, and
// should_checkpoint_and_exit() agreeing on every rank when one rank got a checkpoint signal.
#include <catch2/catch.hpp>  // its implementation: tests/catch_runner.cpp

#include <sys/mman.h>

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <memory>
#include <vector>

#include "catch_session.hpp"
#include "dlx/trial.hpp"

namespace {
std::unique_ptr<dlx::Trial> g_trial;
}

using dlx::comm::Tensor;

TEST_CASE("broadcast_parameters gives every rank rank 0's values", "[mpi]") {
  auto& trial = *g_trial;
  std::vector<float> weights(1001, static_cast<float>(trial.rank()) + 0.5F);
  std::vector<std::int64_t> counters(3, trial.rank() * 7);
  std::vector<Tensor> params{Tensor::of(std::span<float>(weights)),
                             Tensor::of(std::span<std::int64_t>(counters))};
  trial.broadcast_parameters(params);
  CHECK(weights == std::vector<float>(1001, 0.5F));
  CHECK(counters == std::vector<std::int64_t>(3, 0));
  std::fill(weights.begin(), weights.end(), static_cast<float>(trial.rank()) + 0.5F);
  trial.broadcast_parameters(params, trial.size() - 1);
  CHECK(weights.front() == static_cast<float>(trial.size() - 1) + 0.5F);
}

TEST_CASE("allreduce of a gradient list sums every tensor", "[mpi]") {
  auto& trial = *g_trial;
  const int n = trial.size();
  std::vector<double> a(5, 1.0), b(70000, trial.rank());
  std::vector<std::int32_t> c(3, 2);
  std::vector<Tensor> grads{Tensor::of(std::span<double>(a)), Tensor::of(std::span<double>(b)),
                            Tensor::of(std::span<std::int32_t>(c))};
  trial.allreduce(grads);
  CHECK(a == std::vector<double>(5, n));
  CHECK(b == std::vector<double>(70000, n * (n - 1) / 2.0));
  CHECK(c == std::vector<std::int32_t>(3, 2 * n));
  auto& fused = trial.fused_allreduce();
  CHECK(fused.bucket_bytes() == dlx::comm::kDefaultBucketBytes);
  for (const auto& g : grads) fused.add(g);
  fused.synchronize();
  CHECK(a == std::vector<double>(5, n * n));
}

TEST_CASE("one rank's checkpoint signal stops every rank at the same step", "[mpi]") {
  auto& trial = *g_trial;
  CHECK_FALSE(trial.should_checkpoint_and_exit());
  if (trial.rank() == trial.size() - 1) std::raise(SIGUSR2);  // caught: the process lives on
  CHECK(trial.should_checkpoint_and_exit());
  CHECK(trial.should_checkpoint_and_exit());  // stays set
  CHECK(dlx::kRequeueExitCode == 85);
}

// Device tensors on the MPI backend of a non-CUDA-aware Open MPI (Debian's): refused by the
// trial's collectives with why, on every rank, before a byte is read (PROT_NONE pages).
TEST_CASE("the trial's collectives refuse GPU memory they cannot handle, with why", "[mpi]") {
  auto& trial = *g_trial;
  if (trial.communicator().reduces_device_memory()) {
    WARN("this Open MPI is CUDA-aware: the refusal cannot be shown here");
    return;
  }
  constexpr std::size_t kBytes = 1 << 16;
  void* gpu = ::mmap(nullptr, kBytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(gpu != MAP_FAILED);
  std::vector<float> host(4, 1.0F);
  const std::vector<Tensor> list{Tensor::of(std::span<float>(host)),
                                 Tensor::on_cuda_device(gpu, 64, dlx::comm::DataType::float32)};
  CHECK_THROWS_WITH(trial.allreduce(list),
                    Catch::Contains("given to the mpi backend, which cannot sum it"));
  CHECK_THROWS_WITH(trial.broadcast_parameters(list),
                    Catch::Contains("broadcast_parameters takes host tensors, but tensor 1 of 2 is "
                                    "in GPU memory"));
  CHECK(host == std::vector<float>(4, 1.0F));
  ::munmap(gpu, kBytes);
}

int main(int argc, char** argv) {
  int failed = 1;
  try {
    g_trial = std::make_unique<dlx::Trial>();
    failed = dlx::testing::run_catch_session(argc, argv) == 0 ? 0 : 1;
    std::int32_t any = failed;
    g_trial->communicator().allreduce_sum(std::span<std::int32_t>(&any, 1));
    failed = any;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "trial_mpi_test: %s\n", error.what());
  }
  g_trial.reset();
  return failed;
}
