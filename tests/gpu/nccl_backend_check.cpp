// SPDX-License-Identifier: Apache-2.0
// dlx-gpu-nccl-check: the NCCL backend through dlx::Trial on a real GPU, under
// `mpirun -n <ranks> dlx-gpu-nccl-check` (one rank per GPU: NCCL refuses two ranks on one GPU).
//
// What it shows, on every rank, for every element type the backends reduce:
//   - bring-up: the trial's communicator is NCCL (DLX_COMM_BACKEND=nccl unless set otherwise),
//     from rank 0's unique id broadcast over MPI;
//   - allreduce_sum of host buffers of 0, 1, odd and 32 MiB sizes, blocking and through the
//     non-blocking call, gives the exact sum (values are small integers: exact in every type);
//   - the fused paths: Trial::allreduce (blocking buckets) and FusedAllreduce add()/synchronize()
//     (overlapped) over 100 tensors of mixed types and odd sizes, the same as per-tensor sums;
//   - broadcast_parameters gives every rank the root's bytes; barrier returns.
// Prints one line per check and exits 0 when all passed, 1 when any failed, 77 (ctest's skip
// code) when no GPU is visible, which is the only outcome on a machine without one.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "dlx/comm/nccl_communicator.hpp"
#include "dlx/trial.hpp"

namespace {

using dlx::comm::DataType;
using dlx::comm::Tensor;

int g_failures = 0;

void report(bool ok, const std::string& what) {
  if (!ok) ++g_failures;
  std::printf("%s %s\n", ok ? "ok  " : "FAIL", what.c_str());
  std::fflush(stdout);
}

// Element i of rank r's buffer, and the sum over all ranks of element i: small integers, so the
// sum is exact in float32 too.
std::int64_t contribution(std::size_t i, int rank) {
  return static_cast<std::int64_t>(i % 89) + 3 * rank;
}
std::int64_t expected_sum(std::size_t i, int ranks) {
  std::int64_t sum = 0;
  for (int r = 0; r < ranks; ++r) sum += contribution(i, r);
  return sum;
}

// A host buffer of one element type, filled with this rank's contributions.
struct Buffer {
  DataType type;
  std::vector<std::byte> bytes;
  std::size_t count;

  Buffer(DataType t, std::size_t n, int rank) : type(t), bytes(n * size_of(t)), count(n) {
    for (std::size_t i = 0; i < n; ++i) set(i, contribution(i, rank));
  }
  Tensor tensor() { return Tensor{bytes.data(), count, type}; }

  template <class T>
  T* as() { return reinterpret_cast<T*>(bytes.data()); }
  void set(std::size_t i, std::int64_t v) {
    switch (type) {
      case DataType::float32: as<float>()[i] = static_cast<float>(v); break;
      case DataType::float64: as<double>()[i] = static_cast<double>(v); break;
      case DataType::int32: as<std::int32_t>()[i] = static_cast<std::int32_t>(v); break;
      case DataType::int64: as<std::int64_t>()[i] = v; break;
      case DataType::uint32: as<std::uint32_t>()[i] = static_cast<std::uint32_t>(v); break;
      case DataType::uint64: as<std::uint64_t>()[i] = static_cast<std::uint64_t>(v); break;
    }
  }
  double get(std::size_t i) {
    switch (type) {
      case DataType::float32: return as<float>()[i];
      case DataType::float64: return as<double>()[i];
      case DataType::int32: return as<std::int32_t>()[i];
      case DataType::int64: return static_cast<double>(as<std::int64_t>()[i]);
      case DataType::uint32: return as<std::uint32_t>()[i];
      case DataType::uint64: return static_cast<double>(as<std::uint64_t>()[i]);
    }
    return 0;
  }
  // Index of the first element that is not the sum over `ranks`, or count when all are.
  std::size_t first_wrong(int ranks) {
    for (std::size_t i = 0; i < count; ++i)
      if (get(i) != static_cast<double>(expected_sum(i, ranks))) return i;
    return count;
  }
};

constexpr DataType kTypes[] = {DataType::float32, DataType::float64, DataType::int32,
                               DataType::int64,   DataType::uint32,  DataType::uint64};

void check_single_tensors(dlx::Trial& trial) {
  auto& comm = trial.communicator();
  const std::size_t sizes[] = {0, 1, 7, 1001, (std::size_t{32} << 20) / 8 + 3};
  for (DataType type : kTypes) {
    for (std::size_t n : sizes) {
      Buffer blocking(type, n, trial.rank());
      comm.allreduce_sum(blocking.tensor());
      const std::size_t wrong = blocking.first_wrong(trial.size());
      report(wrong == n, fmt::format("allreduce_sum {} x {}{}", to_string(type), n,
                                     wrong == n ? "" : fmt::format(": element {} is {}", wrong,
                                                                   blocking.get(wrong))));
      Buffer async(type, n, trial.rank());
      auto handle = comm.allreduce_sum_async(async.tensor());
      handle.wait();
      report(async.first_wrong(trial.size()) == n,
             fmt::format("allreduce_sum_async {} x {}", to_string(type), n));
    }
  }
}

// 100 tensors of rotating types and odd sizes, some above the 128 KiB "alone" limit.
std::vector<Buffer> gradient_list(int rank) {
  std::vector<Buffer> list;
  for (std::size_t i = 0; i < 100; ++i) {
    const std::size_t n = (i % 10 == 9) ? 40000 + i : 1 + (i * 37) % 300;
    list.emplace_back(kTypes[i % std::size(kTypes)], n, rank);
  }
  return list;
}

bool all_summed(std::vector<Buffer>& list, int ranks) {
  for (auto& buffer : list)
    if (buffer.first_wrong(ranks) != buffer.count) return false;
  return true;
}

void check_fused(dlx::Trial& trial) {
  auto blocking = gradient_list(trial.rank());
  std::vector<Tensor> tensors;
  for (auto& b : blocking) tensors.push_back(b.tensor());
  trial.allreduce(tensors);
  report(all_summed(blocking, trial.size()),
         "Trial::allreduce (fused buckets) of 100 mixed tensors");

  auto overlapped = gradient_list(trial.rank());
  auto& fused = trial.fused_allreduce();
  for (auto& b : overlapped) fused.add(b.tensor());
  fused.synchronize();
  report(all_summed(overlapped, trial.size()),
         "FusedAllreduce add()/synchronize() (overlapped) of 100 mixed tensors");
}

void check_broadcast(dlx::Trial& trial) {
  std::vector<float> weights(100003, static_cast<float>(trial.rank()) + 0.25F);
  std::vector<std::int64_t> counters(5, 11 * trial.rank());
  std::vector<Tensor> params{Tensor::of(std::span<float>(weights)),
                             Tensor::of(std::span<std::int64_t>(counters))};
  trial.broadcast_parameters(params);
  bool ok = true;
  for (float w : weights) ok = ok && w == 0.25F;
  for (auto c : counters) ok = ok && c == 0;
  report(ok, "broadcast_parameters from rank 0");
  trial.communicator().barrier();
  report(true, "barrier");
}

}  // namespace

int main() {
  if (dlx::comm::cuda_device_count() < 1) {
    std::printf("skip: no GPU visible (this check runs on a GPU machine: scripts/gpu-check.sh)\n");
    return 77;
  }
  setenv("DLX_COMM_BACKEND", "nccl", 0);
  try {
    dlx::Trial trial;
    report(trial.communicator().name() == "nccl",
           fmt::format("communicator is {} (rank {} of {})", trial.communicator().name(),
                       trial.rank(), trial.size()));
    check_single_tensors(trial);
    check_fused(trial);
    check_broadcast(trial);
  } catch (const std::exception& error) {
    report(false, fmt::format("exception: {}", error.what()));
  }
  std::printf("%s: %d failure(s)\n", g_failures == 0 ? "PASS" : "FAIL", g_failures);
  return g_failures == 0 ? 0 : 1;
}
