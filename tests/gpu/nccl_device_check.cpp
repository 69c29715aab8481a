// SPDX-License-Identifier: Apache-2.0
// dlx-gpu-nccl-device-check: the NCCL backend on tensors in GPU memory, through dlx::Trial, under
// `mpirun -n <ranks> dlx-gpu-nccl-device-check` (one rank per GPU; with one GPU, world size 1:
// NCCL refuses two ranks on one device, so cross-rank sums are shown only where there are more).
//
// What it shows, on every rank:
//   - allreduce_sum of device tensors of 0, 1, odd and 32 MiB sizes, every element type, blocking
//     and non-blocking: the exact sum, and bit for bit the host path's result on the same input;
//   - the fused paths on device tensors (Trial::allreduce; FusedAllreduce add()/synchronize())
//     over 100 tensors of mixed types and odd sizes: exact sums, one ncclAllReduce per bucket
//     (plan_buckets' count) and two copy launches per bucket of several tensors;
//   - no host memory: the communicator's host-staging buffer is never allocated while only device
//     tensors are summed (it is the only way the backend moves bytes through the host);
//   - stream order, on a stream of the trainer's and on the legacy default stream: a sum queued
//     behind a copy that waits 300 ms on the trainer's stream sums the copied values (not what
//     was there before), the call returns before that copy has run (the host is not blocked on
//     the trainer's stream), and a copy queued on the trainer's stream right after the call sees
//     the sums without any host synchronisation in between.
// Prints one line per check; exits 0 when all passed, 1 when any failed, 77 without a GPU.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "dlx/comm/fused_allreduce.hpp"
#include "dlx/comm/nccl_communicator.hpp"
#include "dlx/trial.hpp"

namespace {

using dlx::comm::DataType;
using dlx::comm::NcclCommunicator;
using dlx::comm::Tensor;

int g_failures = 0;

void report(bool ok, const std::string& what) {
  if (!ok) ++g_failures;
  std::printf("%s %s\n", ok ? "ok  " : "FAIL", what.c_str());
  std::fflush(stdout);
}

void cuda(cudaError_t status, const char* call) {
  if (status != cudaSuccess) {
    throw std::runtime_error(fmt::format("{}: {}", call, cudaGetErrorString(status)));
  }
}
#define CUDA(call) cuda((call), #call)

std::int64_t contribution(std::size_t i, int rank) {
  return static_cast<std::int64_t>(i % 89) + 3 * rank;
}

// Host bytes of `count` elements of `type`, each contribution(i, rank) (or, with ranks > 0, the
// sum of contribution(i, r) over r < ranks): small integers, exact in every type.
std::vector<std::byte> values(DataType type, std::size_t count, int rank, int ranks = 0) {
  std::vector<std::byte> bytes(count * size_of(type));
  for (std::size_t i = 0; i < count; ++i) {
    std::int64_t v = 0;
    if (ranks == 0) {
      v = contribution(i, rank);
    } else {
      for (int r = 0; r < ranks; ++r) v += contribution(i, r);
    }
    std::byte* at = bytes.data() + i * size_of(type);
    switch (type) {
      case DataType::float32: { const auto x = static_cast<float>(v); std::memcpy(at, &x, 4); break; }
      case DataType::float64: { const auto x = static_cast<double>(v); std::memcpy(at, &x, 8); break; }
      case DataType::int32: { const auto x = static_cast<std::int32_t>(v); std::memcpy(at, &x, 4); break; }
      case DataType::int64: std::memcpy(at, &v, 8); break;
      case DataType::uint32: { const auto x = static_cast<std::uint32_t>(v); std::memcpy(at, &x, 4); break; }
      case DataType::uint64: { const auto x = static_cast<std::uint64_t>(v); std::memcpy(at, &x, 8); break; }
    }
  }
  return bytes;
}

// A tensor in device memory, filled from the host.
struct DeviceBuffer {
  DataType type;
  std::size_t count;
  void* device = nullptr;

  DeviceBuffer(DataType t, std::size_t n, const std::vector<std::byte>& host) : type(t), count(n) {
    CUDA(cudaMalloc(&device, std::max<std::size_t>(host.size(), 1)));
    if (!host.empty()) CUDA(cudaMemcpy(device, host.data(), host.size(), cudaMemcpyHostToDevice));
  }
  ~DeviceBuffer() { cudaFree(device); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : type(other.type), count(other.count), device(std::exchange(other.device, nullptr)) {}

  Tensor tensor() const { return Tensor::on_cuda_device(device, count, type); }
  std::vector<std::byte> read() const {
    std::vector<std::byte> out(count * size_of(type));
    if (!out.empty()) CUDA(cudaMemcpy(out.data(), device, out.size(), cudaMemcpyDeviceToHost));
    return out;
  }
};

constexpr DataType kTypes[] = {DataType::float32, DataType::float64, DataType::int32,
                               DataType::int64,   DataType::uint32,  DataType::uint64};

void check_single_tensors(dlx::Trial& trial, NcclCommunicator& comm) {
  const std::size_t sizes[] = {0, 1, 7, 1001, (std::size_t{32} << 20) / 8 + 3};
  for (DataType type : kTypes) {
    for (std::size_t n : sizes) {
      const auto input = values(type, n, trial.rank());
      const auto expected = values(type, n, 0, trial.size());
      DeviceBuffer blocking(type, n, input);
      comm.allreduce_sum(blocking.tensor());
      report(blocking.read() == expected,
             fmt::format("device allreduce_sum {} x {}", to_string(type), n));
      DeviceBuffer async(type, n, input);
      auto handle = comm.allreduce_sum_async(async.tensor());
      handle.wait();
      report(async.read() == expected,
             fmt::format("device allreduce_sum_async {} x {}", to_string(type), n));
    }
  }
}

// 100 tensors in runs of ten of one type (nine small ones that share a bucket, then one above the
// 128 KiB "alone" limit), odd sizes.
std::vector<DeviceBuffer> gradient_list(int rank) {
  std::vector<DeviceBuffer> list;
  for (std::size_t i = 0; i < 100; ++i) {
    const std::size_t n = (i % 10 == 9) ? 40000 + i : 1 + (i * 37) % 300;
    const DataType type = kTypes[(i / 10) % std::size(kTypes)];
    list.emplace_back(type, n, values(type, n, rank));
  }
  return list;
}

bool all_summed(const std::vector<DeviceBuffer>& list, int ranks) {
  for (const auto& buffer : list)
    if (buffer.read() != values(buffer.type, buffer.count, 0, ranks)) return false;
  return true;
}

void check_fused(dlx::Trial& trial, NcclCommunicator& comm) {
  auto blocking = gradient_list(trial.rank());
  std::vector<Tensor> tensors;
  for (const auto& b : blocking) tensors.push_back(b.tensor());
  auto& fused = trial.fused_allreduce();
  const auto buckets = dlx::comm::plan_buckets(tensors, fused.bucket_bytes(), fused.alone_bytes());
  std::uint64_t multi = 0;
  for (const auto& bucket : buckets) multi += bucket.last - bucket.first > 1 ? 1 : 0;
  report(multi >= 10, fmt::format("the list makes {} buckets of several tensors", multi));
  const auto calls = comm.nccl_allreduce_calls();
  const auto batches = comm.device_copy_batches();
  trial.allreduce(tensors);
  report(all_summed(blocking, trial.size()),
         "Trial::allreduce (fused device buckets) of 100 mixed tensors");
  report(comm.nccl_allreduce_calls() - calls == buckets.size(),
         fmt::format("one ncclAllReduce per bucket: {} calls for {} buckets",
                     comm.nccl_allreduce_calls() - calls, buckets.size()));
  report(comm.device_copy_batches() - batches == 2 * multi,
         fmt::format("two copy launches per bucket of several tensors: {} for {} buckets",
                     comm.device_copy_batches() - batches, multi));

  auto overlapped = gradient_list(trial.rank());
  for (const auto& b : overlapped) fused.add(b.tensor());
  fused.synchronize();
  report(all_summed(overlapped, trial.size()),
         "FusedAllreduce add()/synchronize() (overlapped) of 100 mixed device tensors");
}

// The bit-for-bit comparison with the host path (same input, same backend), after the device
// checks (it allocates the host-staging buffer).
void check_same_as_host(dlx::Trial& trial, NcclCommunicator& comm) {
  const std::size_t n = (std::size_t{8} << 20) / 4 + 5;
  std::vector<float> host(n);
  // Not small integers: values whose sum rounds, so that a different order would show.
  for (std::size_t i = 0; i < n; ++i) {
    host[i] = std::ldexp(static_cast<float>(i % 1013) + 0.1F * static_cast<float>(trial.rank()),
                         -static_cast<int>(i % 7));
  }
  std::vector<std::byte> bytes(n * 4);
  std::memcpy(bytes.data(), host.data(), bytes.size());
  DeviceBuffer device(DataType::float32, n, bytes);
  comm.allreduce_sum(std::span<float>(host));
  comm.allreduce_sum(device.tensor());
  const auto summed = device.read();
  report(std::memcmp(summed.data(), host.data(), summed.size()) == 0,
         "device and host paths give the same bits (8 MiB of float32)");
}

// Stream order on `stream` (nullptr: the legacy default stream).
void check_stream_order(dlx::Trial& trial, NcclCommunicator& comm, cudaStream_t stream,
                        const char* which) {
  const std::size_t n = 1 << 20;
  const auto input = values(DataType::float32, n, trial.rank());
  const auto expected = values(DataType::float32, n, 0, trial.size());
  DeviceBuffer tensor(DataType::float32, n, std::vector<std::byte>(n * 4));  // zeros for now
  void* pinned_in = nullptr;
  void* pinned_out = nullptr;
  CUDA(cudaMallocHost(&pinned_in, n * 4));
  CUDA(cudaMallocHost(&pinned_out, n * 4));
  std::memcpy(pinned_in, input.data(), n * 4);
  std::memset(pinned_out, 0, n * 4);
  static std::atomic<bool> copied{false};
  copied = false;
  // The trainer's stream: 300 ms of "compute", then the gradient lands in the tensor.
  CUDA(cudaLaunchHostFunc(stream, [](void*) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    copied = true;
  }, nullptr));
  CUDA(cudaMemcpyAsync(tensor.device, pinned_in, n * 4, cudaMemcpyHostToDevice, stream));
  comm.set_cuda_stream(stream);
  auto handle = comm.allreduce_sum_async(tensor.tensor());
  const bool returned_first = !copied.load();
  const bool busy_at_first = !handle.ready();
  // The trainer's next use of the sums, queued before anyone waited for them.
  CUDA(cudaMemcpyAsync(pinned_out, tensor.device, n * 4, cudaMemcpyDeviceToHost, stream));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!handle.ready() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const bool ready_later = handle.ready();
  handle.wait();
  CUDA(cudaStreamSynchronize(stream));
  comm.set_cuda_stream(nullptr);
  report(returned_first,
         fmt::format("{}: the call returned while the trainer's stream was still busy", which));
  report(busy_at_first && ready_later,
         fmt::format("{}: the handle's ready() was false, then true without a wait", which));
  report(tensor.read() == expected,
         fmt::format("{}: the sum read the values the stream wrote before the call", which));
  report(std::memcmp(pinned_out, expected.data(), n * 4) == 0,
         fmt::format("{}: the stream's next copy saw the sums, with no host wait in between", which));
  cudaFreeHost(pinned_in);
  cudaFreeHost(pinned_out);
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
    auto* comm = dynamic_cast<NcclCommunicator*>(&trial.communicator());
    report(comm != nullptr, fmt::format("communicator is {} (rank {} of {})",
                                        trial.communicator().name(), trial.rank(), trial.size()));
    if (comm != nullptr) {
      report(comm->reduces_device_memory(), "the NCCL backend takes device memory");
      check_single_tensors(trial, *comm);
      check_fused(trial, *comm);
      cudaStream_t stream = nullptr;
      CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
      check_stream_order(trial, *comm, stream, "trainer's stream");
      check_stream_order(trial, *comm, nullptr, "legacy default stream");
      cudaStreamDestroy(stream);
      report(comm->host_staging_bytes() == 0,
             fmt::format("no host staging while only device tensors were summed ({} bytes)",
                         comm->host_staging_bytes()));
      check_same_as_host(trial, *comm);
    }
  } catch (const std::exception& error) {
    report(false, fmt::format("exception: {}", error.what()));
  }
  std::printf("%s: %d failure(s)\n", g_failures == 0 ? "PASS" : "FAIL", g_failures);
  return g_failures == 0 ? 0 : 1;
}
