// SPDX-License-Identifier: Apache-2.0
// Fused (bucketed) allreduce under mpirun -n 2 / -n 3: bit-for-bit equal to one allreduce per
// tensor for every element type, odd sizes and bucket sizes that fall on, just before and just
// after tensor boundaries; the overlapped path (add/synchronize) too; floating-point sums are
// the rank-order sum x0 + x1 + ... exactly; non-blocking sums are correct while the caller
// computes and keep call order with blocking ones.
#include <catch2/catch.hpp>

#include <sys/mman.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "dlx/comm/fused_allreduce.hpp"
#include "dlx/comm/mpi_communicator.hpp"

using dlx::comm::DataType;
using dlx::comm::FusedAllreduce;
using dlx::comm::MpiCommunicator;
using dlx::comm::Tensor;

namespace {

// Odd sizes, an empty tensor and a large one.
const std::vector<std::size_t> kSizes{1, 3, 17, 0, 255, 1000, 4097, 5, 65537, 2};

// Values that make floating-point rounding depend on the summation order.
template <class T>
std::vector<T> values_for(int rank, std::size_t tensor, std::size_t count) {
  std::mt19937_64 rng(1000003ULL * static_cast<std::uint64_t>(rank) + tensor);
  std::vector<T> out(count);
  for (auto& v : out) {
    if constexpr (std::is_floating_point_v<T>) {
      std::uniform_real_distribution<double> mantissa(-1.0, 1.0);
      std::uniform_int_distribution<int> exponent(-20, 20);
      v = static_cast<T>(std::ldexp(mantissa(rng), exponent(rng)));
    } else {
      v = static_cast<T>(rng() % 1000000007ULL);  // unsigned wrap-around is defined
    }
  }
  return out;
}

template <class T>
struct List {
  std::vector<std::vector<T>> data;
  std::vector<Tensor> tensors() {
    std::vector<Tensor> out;
    for (auto& d : data) out.push_back(Tensor::of(std::span<T>(d)));
    return out;
  }
};

template <class T>
List<T> make_list(int rank) {
  List<T> list;
  for (std::size_t i = 0; i < kSizes.size(); ++i) list.data.push_back(values_for<T>(rank, i, kSizes[i]));
  return list;
}

template <class T>
bool identical(const List<T>& a, const List<T>& b) {
  for (std::size_t i = 0; i < a.data.size(); ++i) {
    if (std::memcmp(a.data[i].data(), b.data[i].data(), a.data[i].size() * sizeof(T)) != 0) {
      return false;
    }
  }
  return true;
}

// Bucket sizes around the tensor boundaries: 0 (no fusion), one element, the sum of the first k
// tensors exactly, one element less and more, and the default.
template <class T>
std::vector<std::size_t> bucket_sizes() {
  std::vector<std::size_t> out{0, sizeof(T), 7, dlx::comm::kDefaultBucketBytes};
  std::size_t prefix = 0;
  for (std::size_t k = 0; k < kSizes.size(); ++k) {
    prefix += kSizes[k] * sizeof(T);
    out.push_back(prefix);
    out.push_back(prefix - sizeof(T));
    out.push_back(prefix + sizeof(T));
  }
  return out;
}

template <class T>
void check_fused_equals_per_tensor(MpiCommunicator& comm) {
  auto reference = make_list<T>(comm.rank());
  for (auto& tensor : reference.tensors()) comm.allreduce_sum(tensor);
  // Tensors reduced alone from the default size on, and from the third tensor's size on.
  for (std::size_t alone : {dlx::comm::kDefaultAloneBytes, kSizes[2] * sizeof(T)})
  for (std::size_t bucket : bucket_sizes<T>()) {
    INFO("type " << dlx::comm::to_string(dlx::comm::data_type_of<T>()) << ", bucket " << bucket
                 << " bytes, alone from " << alone << " bytes");
    FusedAllreduce fused(comm, bucket, alone);
    auto blocking = make_list<T>(comm.rank());
    auto tensors = blocking.tensors();
    fused.allreduce_sum(tensors);
    CHECK(identical(blocking, reference));

    auto overlapped = make_list<T>(comm.rank());
    for (const auto& tensor : overlapped.tensors()) fused.add(tensor);
    fused.synchronize();
    CHECK(identical(overlapped, reference));
  }
}

}  // namespace

TEMPLATE_TEST_CASE("fused allreduce equals per-tensor allreduce bit for bit", "[mpi]", float,
                   double, std::int32_t, std::int64_t, std::uint32_t, std::uint64_t) {
  MpiCommunicator comm(MPI_COMM_WORLD);
  REQUIRE(comm.size() >= 2);
  check_fused_equals_per_tensor<TestType>(comm);
}

TEMPLATE_TEST_CASE("floating-point sums are the rank-order sum exactly", "[mpi]", float, double) {
  MpiCommunicator comm(MPI_COMM_WORLD);
  for (std::size_t count : {std::size_t{1}, std::size_t{2}, std::size_t{1001}, std::size_t{300000}}) {
    auto mine = values_for<TestType>(comm.rank(), 99, count);
    comm.allreduce_sum(std::span<TestType>(mine));
    std::vector<TestType> expected = values_for<TestType>(0, 99, count);
    for (int r = 1; r < comm.size(); ++r) {
      const auto other = values_for<TestType>(r, 99, count);
      for (std::size_t j = 0; j < count; ++j) expected[j] += other[j];
    }
    CHECK(std::memcmp(mine.data(), expected.data(), count * sizeof(TestType)) == 0);
  }
}

TEST_CASE("a list of mixed element types is bucketed by type", "[mpi]") {
  MpiCommunicator comm(MPI_COMM_WORLD);
  auto f = values_for<float>(comm.rank(), 1, 33);
  auto d = values_for<double>(comm.rank(), 2, 9);
  auto i = values_for<std::int64_t>(comm.rank(), 3, 5);
  auto f2 = values_for<float>(comm.rank(), 4, 7);
  auto ref_f = f, ref_f2 = f2;
  auto ref_d = d;
  auto ref_i = i;
  comm.allreduce_sum(std::span<float>(ref_f));
  comm.allreduce_sum(std::span<double>(ref_d));
  comm.allreduce_sum(std::span<std::int64_t>(ref_i));
  comm.allreduce_sum(std::span<float>(ref_f2));
  std::vector<Tensor> list{Tensor::of(std::span<float>(f)), Tensor::of(std::span<double>(d)),
                           Tensor::of(std::span<std::int64_t>(i)), Tensor::of(std::span<float>(f2))};
  CHECK(dlx::comm::plan_buckets(list, 1 << 20).size() == 4);
  FusedAllreduce fused(comm);
  fused.allreduce_sum(list);
  CHECK(f == ref_f);
  CHECK(d == ref_d);
  CHECK(i == ref_i);
  CHECK(f2 == ref_f2);
}

TEST_CASE("non-blocking sums overlap with computation and keep call order", "[mpi]") {
  MpiCommunicator comm(MPI_COMM_WORLD);
  const int n = comm.size();
  INFO("MPI_THREAD_MULTIPLE: " << comm.overlaps());
  CHECK(comm.overlaps());  // MpiRuntime asked for it; Open MPI 4.1 provides it
  std::vector<std::vector<double>> buffers;
  for (int k = 0; k < 8; ++k) buffers.emplace_back(100000 + static_cast<std::size_t>(k), comm.rank() + k);
  std::vector<dlx::comm::AllreduceHandle> handles;
  for (auto& b : buffers) handles.push_back(comm.allreduce_sum_async(std::span<double>(b)));
  // "Computation" while the sums run: touches other memory only.
  std::vector<double> work(200000, 1.0);
  double acc = 0;
  for (int pass = 0; pass < 20; ++pass) {
    for (auto& w : work) acc += w * 1.000001;
  }
  CHECK(acc > 0);
  // A blocking call after them runs after them.
  std::vector<std::int32_t> after(3, 1);
  comm.allreduce_sum(std::span<std::int32_t>(after));
  for (std::size_t k = 0; k < handles.size(); ++k) {
    CHECK(handles[k].ready());  // the blocking call waited for every earlier async one
    handles[k].wait();
    const double expected = n * (n - 1) / 2.0 + n * static_cast<double>(k);
    CHECK(buffers[k].front() == expected);
    CHECK(buffers[k].back() == expected);
  }
  CHECK(after == std::vector<std::int32_t>(3, n));
  // A handle dropped without wait() still completes before the buffer goes away.
  {
    std::vector<float> dropped(1000, 1.0F);
    auto handle = comm.allreduce_sum_async(std::span<float>(dropped));
  }
  comm.barrier();
}

// Debian's Open MPI is built without CUDA (MPIX_CUDA_AWARE_SUPPORT 0): device tensors are refused
// on every rank, at the call, before anything is read. The tensors lie in PROT_NONE pages: a
// read on the host would kill the rank with SIGSEGV.
TEST_CASE("device tensors are refused where Open MPI is not CUDA-aware, and never read",
          "[mpi]") {
  MpiCommunicator comm(MPI_COMM_WORLD);
  if (comm.reduces_device_memory()) {
    WARN("this Open MPI is CUDA-aware: the refusal cannot be shown here");
    return;
  }
  constexpr std::size_t kBytes = 1 << 16;
  void* gpu = ::mmap(nullptr, kBytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(gpu != MAP_FAILED);
  const Tensor device = Tensor::on_cuda_device(gpu, 100, DataType::float32);
  std::vector<double> host(3, 1.0);
  const std::vector<Tensor> list{Tensor::of(std::span<double>(host)), device};
  // Named: Catch2's || keeps references to its operands.
  const auto not_cuda_aware = Catch::Contains(
      "a tensor in GPU memory was given to the mpi backend, which cannot sum it: this Open MPI is "
      "not CUDA-aware");
  const auto no_cuda = Catch::Contains("cannot sum it: this dlx was built without CUDA");
  const auto refused = not_cuda_aware || no_cuda;
  CHECK_THROWS_WITH(comm.allreduce_sum(device), refused);
  CHECK_THROWS_WITH(comm.allreduce_sum_async(device), refused);
  CHECK_THROWS_WITH(comm.allreduce_sum_bucket(list), refused);
  CHECK_THROWS_WITH(comm.allreduce_sum_bucket_async(list), refused);
  CHECK_THROWS_WITH(comm.allreduce_sum_bucket(list), Catch::Contains("copy the tensor to host memory"));
  FusedAllreduce fused(comm);
  CHECK_THROWS_WITH(fused.allreduce_sum(list), refused);
  CHECK(host == std::vector<double>(3, 1.0));  // refused before the host tensor was summed
  CHECK_THROWS_WITH(fused.add(device), refused);
  // The communicator still works afterwards: every rank refused alike, none is left waiting.
  fused.allreduce_sum(std::span<const Tensor>(list).first(1));
  CHECK(host == std::vector<double>(3, static_cast<double>(comm.size())));
  ::munmap(gpu, kBytes);
}
