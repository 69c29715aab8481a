// SPDX-License-Identifier: Apache-2.0
// FusedAllreduce with tensors in GPU memory, against a recording communicator (pure logic; the
// real NCCL path runs in tests/gpu/nccl_device_check.cpp on a GPU, the MPI refusal under mpirun
// in fused_allreduce_mpi_test.cpp). The "device" tensors here lie in pages mapped PROT_NONE: if
// FusedAllreduce ever read or packed one on the host, the test would die of SIGSEGV.
#include <catch2/catch.hpp>

#include <sys/mman.h>

#include <cstddef>
#include <string>
#include <vector>

#include "dlx/comm/comm_error.hpp"
#include "dlx/comm/fused_allreduce.hpp"

using dlx::comm::AllreduceHandle;
using dlx::comm::CommError;
using dlx::comm::DataType;
using dlx::comm::FusedAllreduce;
using dlx::comm::Memory;
using dlx::comm::Tensor;

namespace {

// Memory no host code may touch: stands for a GPU's.
class Untouchable {
 public:
  explicit Untouchable(std::size_t bytes) : bytes_(bytes) {
    memory_ = ::mmap(nullptr, bytes_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(memory_ != MAP_FAILED);
  }
  ~Untouchable() { ::munmap(memory_, bytes_); }
  Untouchable(const Untouchable&) = delete;
  Untouchable& operator=(const Untouchable&) = delete;
  Tensor f32(std::size_t offset, std::size_t count) const {
    return Tensor::on_cuda_device(static_cast<std::byte*>(memory_) + offset, count,
                                  DataType::float32);
  }

 private:
  std::size_t bytes_;
  void* memory_;
};

// One rank: a sum is the identity. Records what it was asked to sum.
class Recording final : public dlx::comm::Communicator {
 public:
  explicit Recording(bool device) : device_(device) {}
  std::string_view name() const noexcept override { return "recording"; }
  int rank() const noexcept override { return 0; }
  int size() const noexcept override { return 1; }
  void allreduce_sum(Tensor tensor) override {
    REQUIRE_FALSE(tensor.on_device());  // device tensors must come as buckets
    host_calls.push_back(tensor.count);
  }
  using Communicator::allreduce_sum;
  bool reduces_device_memory() const noexcept override { return device_; }
  void allreduce_sum_bucket(std::span<const Tensor> tensors) override {
    device_buckets.emplace_back(tensors.begin(), tensors.end());
  }
  AllreduceHandle allreduce_sum_bucket_async(std::vector<Tensor> tensors) override {
    device_buckets.push_back(std::move(tensors));
    return AllreduceHandle::completed();
  }
  void broadcast(std::span<std::byte>, int) override {}
  void barrier() override {}

  std::vector<std::size_t> host_calls;  // element counts
  std::vector<std::vector<Tensor>> device_buckets;

 private:
  bool device_;
};

std::vector<std::size_t> counts(const std::vector<Tensor>& tensors) {
  std::vector<std::size_t> out;
  for (const auto& t : tensors) out.push_back(t.count);
  return out;
}

}  // namespace

TEST_CASE("plan_buckets never puts host and device tensors in one bucket") {
  Untouchable gpu(4096);
  std::vector<float> host(8);
  const std::vector<Tensor> list{Tensor::of(std::span<float>(host).first(2)), gpu.f32(0, 2),
                                 gpu.f32(64, 2), Tensor::of(std::span<float>(host).last(2))};
  const auto buckets = dlx::comm::plan_buckets(list, 1 << 20);
  REQUIRE(buckets.size() == 3);
  CHECK((buckets[0].first == 0 && buckets[0].last == 1));
  CHECK((buckets[1].first == 1 && buckets[1].last == 3));
  CHECK((buckets[2].first == 3 && buckets[2].last == 4));
}

TEST_CASE("device tensors go to the backend as buckets and are never read on the host") {
  Untouchable gpu(1 << 20);
  std::vector<float> a(4, 1.0F), b(4, 2.0F);
  // host a, host b | device 3 small + 1 of 64 KiB (alone at 32 KiB) + 1 small | host a again
  const std::vector<Tensor> list{Tensor::of(std::span<float>(a)), Tensor::of(std::span<float>(b)),
                                 gpu.f32(0, 10), gpu.f32(4096, 3), gpu.f32(8192, 0),
                                 gpu.f32(65536, 16384), gpu.f32(16384, 7),
                                 Tensor::of(std::span<float>(a))};
  Recording comm(true);
  FusedAllreduce fused(comm, 1 << 20, 32 << 10);
  fused.allreduce_sum(list);
  // Host: a and b packed into one buffer (8 elements), then a alone.
  CHECK(comm.host_calls == std::vector<std::size_t>{8, 4});
  REQUIRE(comm.device_buckets.size() == 3);
  CHECK(counts(comm.device_buckets[0]) == std::vector<std::size_t>{10, 3, 0});
  CHECK(counts(comm.device_buckets[1]) == std::vector<std::size_t>{16384});
  CHECK(counts(comm.device_buckets[2]) == std::vector<std::size_t>{7});
  for (const auto& bucket : comm.device_buckets)
    for (const auto& tensor : bucket) CHECK(tensor.memory == Memory::cuda_device);
  CHECK(a == std::vector<float>(4, 1.0F));  // one rank: the sum is the value

  SECTION("overlapped: add() and synchronize() hand device buckets over the same way") {
    comm.device_buckets.clear();
    comm.host_calls.clear();
    for (const auto& tensor : list) fused.add(tensor);
    fused.synchronize();
    CHECK(comm.host_calls == std::vector<std::size_t>{8, 4});
    REQUIRE(comm.device_buckets.size() == 3);
    CHECK(counts(comm.device_buckets[0]) == std::vector<std::size_t>{10, 3});
    CHECK(counts(comm.device_buckets[1]) == std::vector<std::size_t>{16384});
    CHECK(counts(comm.device_buckets[2]) == std::vector<std::size_t>{7});
  }
}

TEST_CASE("a backend that sums host memory only refuses device tensors before summing anything") {
  Untouchable gpu(4096);
  std::vector<float> a(4, 1.0F);
  const std::vector<Tensor> list{Tensor::of(std::span<float>(a)), gpu.f32(0, 10)};
  Recording comm(false);
  FusedAllreduce fused(comm);
  const std::string expected =
      "a tensor in GPU memory was given to the recording backend, which cannot sum it: this "
      "backend sums host memory only. Use the NCCL backend";
  CHECK_THROWS_WITH(fused.allreduce_sum(list), Catch::Contains(expected));
  CHECK_THROWS_AS(fused.allreduce_sum(list), CommError);
  CHECK(comm.host_calls.empty());  // the host tensor before it was not summed either
  CHECK(comm.device_buckets.empty());
  fused.add(list[0]);
  CHECK_THROWS_WITH(fused.add(list[1]), Catch::Contains(expected));
  fused.synchronize();
  CHECK(comm.device_buckets.empty());
}
