// SPDX-License-Identifier: Apache-2.0
// The MPI backend's shared-memory path for fusion buckets (shared_memory_reducer.hpp), under
// mpirun -n 2 / -n 3 on one host: it is taken when every rank shares the node, and its sums are
// bit-for-bit those of one MPI allreduce per tensor (and, for floating point, the rank-order sum
// computed here) for every element type, odd sizes, bucket boundaries, windows far smaller than
// the bucket (many pieces, slices of zero elements) and buckets larger than the default window,
// blocking and overlapped; DLX_FUSION_SHM=0 and disagreeing ranks turn it off everywhere.
// Which tensors take the path (shared_memory_pieces() counts the pieces): every bucket, also one
// of a single tensor, however far above the packed path's alone size (kDefaultAloneBytes), up to
// kSharedMemoryAloneBytes; tensors from that size on, or larger than the bucket, are reduced alone.
// With DLX_TEST_EXPECT_SHM=0 in the environment (ctest's run with Open MPI's shared-memory
// windows excluded) the window cannot be made: the path must be off and the sums still right.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "dlx/comm/comm_error.hpp"
#include "dlx/comm/fused_allreduce.hpp"
#include "dlx/comm/mpi_communicator.hpp"

using dlx::comm::FusedAllreduce;
using dlx::comm::MpiCommunicator;
using dlx::comm::MpiOptions;
using dlx::comm::Tensor;

namespace {

// Whether this run can make the window (ctest sets DLX_TEST_EXPECT_SHM=0 where it cannot).
bool shm_expected() {
  const char* value = std::getenv("DLX_TEST_EXPECT_SHM");
  return value == nullptr || std::string(value) != "0";
}

MpiOptions shm_with(std::size_t segment_bytes) {
  return MpiOptions{.shared_memory_fusion = true, .shared_memory_bytes = segment_bytes};
}
const MpiOptions kWithoutShm{.shared_memory_fusion = false};

// Values whose floating-point sum depends on the order of the additions; integers large enough
// that three ranks overflow int32 (wrap-around, as MPI_SUM).
template <class T>
std::vector<T> values_for(int rank, std::size_t tensor, std::size_t count) {
  std::mt19937_64 rng(7919ULL * static_cast<std::uint64_t>(rank) + tensor);
  std::vector<T> out(count);
  for (auto& v : out) {
    if constexpr (std::is_floating_point_v<T>) {
      std::uniform_real_distribution<double> mantissa(-1.0, 1.0);
      std::uniform_int_distribution<int> exponent(-24, 24);
      v = static_cast<T>(std::ldexp(mantissa(rng), exponent(rng)));
    } else {
      v = static_cast<T>(rng() % 2000000011ULL);
    }
  }
  return out;
}

template <class T>
struct List {
  std::vector<std::vector<T>> data;

  List(int rank, const std::vector<std::size_t>& sizes) {
    for (std::size_t i = 0; i < sizes.size(); ++i) data.push_back(values_for<T>(rank, i, sizes[i]));
  }
  std::vector<Tensor> tensors() {
    std::vector<Tensor> out;
    for (auto& d : data) out.push_back(Tensor::of(std::span<T>(d)));
    return out;
  }
  bool operator==(const List& other) const {
    for (std::size_t i = 0; i < data.size(); ++i) {
      if (data[i].size() != other.data[i].size() ||
          std::memcmp(data[i].data(), other.data[i].data(), data[i].size() * sizeof(T)) != 0) {
        return false;
      }
    }
    return true;
  }
};

// One allreduce per tensor on a communicator without the shared-memory path.
template <class T>
List<T> per_tensor_reference(MpiCommunicator& plain, const std::vector<std::size_t>& sizes) {
  List<T> reference(plain.rank(), sizes);
  for (auto& tensor : reference.tensors()) plain.allreduce_sum(tensor);
  return reference;
}

// x0 + x1 + ... + x(n-1) in rank order, computed without MPI (floating point only).
template <class T>
List<T> rank_order_sum(int size, const std::vector<std::size_t>& sizes) {
  List<T> sum(0, sizes);
  for (int r = 1; r < size; ++r) {
    const List<T> other(r, sizes);
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      for (std::size_t j = 0; j < sizes[i]; ++j) sum.data[i][j] += other.data[i][j];
    }
  }
  return sum;
}

// Bucket sizes on, just below and just above the first tensor boundaries, and the default.
template <class T>
std::vector<std::size_t> bucket_sizes(const std::vector<std::size_t>& sizes, std::size_t boundaries) {
  std::vector<std::size_t> out{dlx::comm::kDefaultBucketBytes};
  std::size_t prefix = 0;
  for (std::size_t k = 0; k < std::min(boundaries, sizes.size()); ++k) {
    prefix += sizes[k] * sizeof(T);
    if (prefix == 0) continue;
    out.insert(out.end(), {prefix - sizeof(T), prefix, prefix + sizeof(T)});
  }
  return out;
}

// The shared-memory path, blocking and overlapped, against one allreduce per tensor.
template <class T>
void check_shm_equals_per_tensor(MpiCommunicator& shm, MpiCommunicator& plain,
                                 const std::vector<std::size_t>& sizes, std::size_t boundaries) {
  const List<T> reference = per_tensor_reference<T>(plain, sizes);
  if constexpr (std::is_floating_point_v<T>) {
    CHECK(reference == rank_order_sum<T>(shm.size(), sizes));
  }
  for (std::size_t bucket : bucket_sizes<T>(sizes, boundaries)) {
    INFO("bucket " << bucket << " bytes, window piece " << shm.shared_memory_piece_bytes()
                   << " bytes");
    // The packed path's alone size does not apply here: every tensor (all under
    // kSharedMemoryAloneBytes) goes through the buckets, one larger than the bucket alone.
    FusedAllreduce fused(shm, bucket, 1);
    List<T> blocking(shm.rank(), sizes);
    fused.allreduce_sum(blocking.tensors());
    CHECK(blocking == reference);

    List<T> overlapped(shm.rank(), sizes);
    for (const auto& tensor : overlapped.tensors()) fused.add(tensor);
    fused.synchronize();
    CHECK(overlapped == reference);
  }
}

// Odd sizes, empty tensors (at the start too) and one of 64 Ki + 1 elements.
const std::vector<std::size_t> kOddSizes{0, 1, 3, 17, 0, 255, 1000, 4097, 5, 65537, 2};
// Few elements: with a 16-byte window (8-byte pieces) each piece holds one or two elements, so
// some ranks sum slices of zero elements.
const std::vector<std::size_t> kFewSizes{1, 3, 0, 17, 5, 2, 33};

}  // namespace

TEST_CASE("on one host the MPI backend sums fusion buckets through shared memory", "[mpi]") {
  MpiCommunicator defaults(MPI_COMM_WORLD, MpiOptions{});
  CHECK(defaults.sums_buckets() == shm_expected());
  CHECK(defaults.shared_memory_piece_bytes() ==
        (shm_expected() ? dlx::comm::kDefaultFusionShmBytes / 2 : 0));

  MpiCommunicator off(MPI_COMM_WORLD, kWithoutShm);
  CHECK_FALSE(off.sums_buckets());
  CHECK(off.shared_memory_piece_bytes() == 0);

  // A rank that wants it while the others do not: off everywhere (and no rank left waiting).
  MpiCommunicator disagreeing(MPI_COMM_WORLD, MpiOptions{.shared_memory_fusion = off.rank() == 0});
  CHECK_FALSE(disagreeing.sums_buckets());
}

TEST_CASE("DLX_FUSION_SHM turns the path off, other values are refused", "[mpi]") {
  ::setenv("DLX_FUSION_SHM", "0", 1);
  {
    CHECK_FALSE(dlx::comm::mpi_options_from_environment().shared_memory_fusion);
    MpiCommunicator comm(MPI_COMM_WORLD);  // the environment's options
    CHECK_FALSE(comm.sums_buckets());
    std::vector<float> a(100, 1.0F), b(7, 2.0F);
    std::vector<Tensor> list{Tensor::of(std::span<float>(a)), Tensor::of(std::span<float>(b))};
    FusedAllreduce(comm).allreduce_sum(list);
    CHECK(a == std::vector<float>(100, static_cast<float>(comm.size())));
    CHECK(b == std::vector<float>(7, 2.0F * static_cast<float>(comm.size())));
  }
  ::setenv("DLX_FUSION_SHM", "1", 1);
  CHECK(dlx::comm::mpi_options_from_environment().shared_memory_fusion);
  ::setenv("DLX_FUSION_SHM", "", 1);
  CHECK(dlx::comm::mpi_options_from_environment().shared_memory_fusion);
  ::setenv("DLX_FUSION_SHM", "yes", 1);
  CHECK_THROWS_AS(dlx::comm::mpi_options_from_environment(), dlx::comm::CommError);
  CHECK_THROWS_WITH(dlx::comm::mpi_options_from_environment(),
                    Catch::Contains("DLX_FUSION_SHM=yes: expected 1") &&
                        Catch::Contains("or 0 (pack them and call MPI_Allreduce)"));
  ::unsetenv("DLX_FUSION_SHM");
}

TEMPLATE_TEST_CASE("shared-memory bucket sums equal per-tensor allreduce bit for bit", "[mpi]",
                   float, double, std::int32_t, std::int64_t, std::uint32_t, std::uint64_t) {
  MpiCommunicator plain(MPI_COMM_WORLD, kWithoutShm);
  REQUIRE(plain.size() >= 2);
  // Windows of 16 bytes (one or two elements a piece), 200 bytes (96-byte pieces: not a
  // multiple of any tensor), 4 KiB and the default.
  for (std::size_t window : {std::size_t{16}, std::size_t{200}, std::size_t{4096},
                             dlx::comm::kDefaultFusionShmBytes}) {
    MpiCommunicator shm(MPI_COMM_WORLD, shm_with(window));
    REQUIRE(shm.sums_buckets() == shm_expected());
    INFO("type " << dlx::comm::to_string(dlx::comm::data_type_of<TestType>()) << ", window "
                 << window << " bytes");
    if (window < 4096) {
      check_shm_equals_per_tensor<TestType>(shm, plain, kFewSizes, 3);
    } else {
      check_shm_equals_per_tensor<TestType>(shm, plain, kOddSizes, kOddSizes.size());
    }
  }
}

TEMPLATE_TEST_CASE("buckets larger than the default window go through it in pieces", "[mpi]",
                   float, std::int64_t) {
  MpiCommunicator plain(MPI_COMM_WORLD, kWithoutShm);
  MpiCommunicator shm(MPI_COMM_WORLD, MpiOptions{});
  REQUIRE(shm.sums_buckets() == shm_expected());
  // 80 tensors of 64 KiB + 3 elements: about 5 MiB in one bucket,
  // three 2 MiB pieces, the piece boundaries inside tensors.
  const std::vector<std::size_t> sizes(80, (std::size_t{64} << 10) / sizeof(TestType) + 3);
  const List<TestType> reference = per_tensor_reference<TestType>(plain, sizes);
  FusedAllreduce fused(shm);
  for (int step = 0; step < 3; ++step) {  // the halves alternate from step to step
    List<TestType> blocking(shm.rank(), sizes);
    fused.allreduce_sum(blocking.tensors());
    CHECK(blocking == reference);
    List<TestType> overlapped(shm.rank(), sizes);
    for (const auto& tensor : overlapped.tensors()) fused.add(tensor);
    fused.synchronize();
    CHECK(overlapped == reference);
  }
}

TEST_CASE("overlapped shared-memory buckets keep call order with blocking sums", "[mpi]") {
  MpiCommunicator shm(MPI_COMM_WORLD, shm_with(4096));
  const int n = shm.size();
  // Small buckets (1 KiB) so that several are queued on the background thread at once.
  FusedAllreduce fused(shm, 1024);
  std::vector<std::vector<double>> grads;
  for (int k = 0; k < 40; ++k) grads.emplace_back(50 + static_cast<std::size_t>(k), shm.rank() + k);
  for (auto& g : grads) fused.add(Tensor::of(std::span<double>(g)));
  fused.flush();
  // A blocking call runs after every queued bucket, on the same window.
  std::vector<std::int32_t> after(3, 1);
  shm.allreduce_sum(std::span<std::int32_t>(after));
  std::vector<float> x(300, 1.0F), y(300, 2.0F);
  std::vector<Tensor> now{Tensor::of(std::span<float>(x)), Tensor::of(std::span<float>(y))};
  fused.allreduce_sum(now);
  fused.synchronize();
  for (std::size_t k = 0; k < grads.size(); ++k) {
    const double expected = n * (n - 1) / 2.0 + n * static_cast<double>(k);
    CHECK(grads[k].front() == expected);
    CHECK(grads[k].back() == expected);
  }
  CHECK(after == std::vector<std::int32_t>(3, n));
  CHECK(x == std::vector<float>(300, static_cast<float>(n)));
  CHECK(y == std::vector<float>(300, 2.0F * static_cast<float>(n)));
}

namespace {

// ceil(bytes / piece): the pieces one bucket of `bytes` takes through the window.
std::uint64_t pieces_for(std::size_t bytes, std::size_t piece) {
  return (bytes + piece - 1) / piece;
}

template <class T>
std::size_t bytes_of(const std::vector<std::size_t>& sizes) {
  std::size_t bytes = 0;
  for (std::size_t count : sizes) bytes += count * sizeof(T);
  return bytes;
}

}  // namespace

TEMPLATE_TEST_CASE("tensors above the packed path's alone size go through shared memory", "[mpi]",
                   float, std::int64_t) {
  MpiCommunicator plain(MPI_COMM_WORLD, kWithoutShm);
  MpiCommunicator shm(MPI_COMM_WORLD, MpiOptions{});
  REQUIRE(shm.sums_buckets() == shm_expected());
  const std::size_t piece = shm.shared_memory_piece_bytes();
  const std::size_t per_256k = (std::size_t{256} << 10) / sizeof(TestType);
  const std::size_t half_segment = dlx::comm::kDefaultFusionShmBytes / 2 / sizeof(TestType);
  // 256 KiB (twice kDefaultAloneBytes), odd sizes around it, one tensor larger than a half
  // segment (a piece ends inside it, and a slice spans tensors) and small ones between.
  const std::vector<std::size_t> sizes{per_256k, 7, per_256k + 3, 1, half_segment + 4099, 0, 2};
  const List<TestType> reference = per_tensor_reference<TestType>(plain, sizes);
  if constexpr (std::is_floating_point_v<TestType>) {
    CHECK(reference == rank_order_sum<TestType>(shm.size(), sizes));
  }
  FusedAllreduce fused(shm);  // the defaults: kDefaultAloneBytes would send each alone
  REQUIRE(fused.alone_bytes() < per_256k * sizeof(TestType));
  const std::uint64_t expected = shm_expected() ? pieces_for(bytes_of<TestType>(sizes), piece) : 0;
  {
    const std::uint64_t before = shm.shared_memory_pieces();
    List<TestType> blocking(shm.rank(), sizes);
    fused.allreduce_sum(blocking.tensors());
    CHECK(blocking == reference);
    CHECK(shm.shared_memory_pieces() - before == expected);  // one bucket, all of it

    // Overlapped, each tensor of alone_bytes or more starts at once as a bucket of its own, still
    // through the window: {256 KiB}, {7}, {256 KiB + 3}, {1}, {2 MiB + 4099} (two pieces), {2}.
    List<TestType> overlapped(shm.rank(), sizes);
    for (const auto& tensor : overlapped.tensors()) fused.add(tensor);
    fused.synchronize();
    CHECK(overlapped == reference);
    CHECK(shm.shared_memory_pieces() - before == expected + (shm_expected() ? 7U : 0U));
  }

  // One 256 KiB tensor on its own is a bucket of one: through the window too, in one piece.
  const std::vector<std::size_t> one{per_256k + 1};
  const List<TestType> one_reference = per_tensor_reference<TestType>(plain, one);
  const std::uint64_t before = shm.shared_memory_pieces();
  List<TestType> single(shm.rank(), one);
  fused.allreduce_sum(single.tensors());
  CHECK(single == one_reference);
  CHECK(shm.shared_memory_pieces() - before == (shm_expected() ? 1U : 0U));
}

TEST_CASE("a window of 4 KiB moves 256 KiB tensors in many pieces, bit for bit", "[mpi]") {
  MpiCommunicator plain(MPI_COMM_WORLD, kWithoutShm);
  MpiCommunicator shm(MPI_COMM_WORLD, shm_with(4096));  // 2 KiB pieces
  REQUIRE(shm.sums_buckets() == shm_expected());
  const std::vector<std::size_t> sizes{65536, 65539, 13, 65533};
  const List<float> reference = per_tensor_reference<float>(plain, sizes);
  FusedAllreduce fused(shm);
  const std::uint64_t before = shm.shared_memory_pieces();
  List<float> blocking(shm.rank(), sizes);
  fused.allreduce_sum(blocking.tensors());
  CHECK(blocking == reference);
  CHECK(shm.shared_memory_pieces() - before ==
        (shm_expected() ? pieces_for(bytes_of<float>(sizes), 2048) : 0));
}

TEST_CASE("tensors of kSharedMemoryAloneBytes or more, or larger than the bucket, go alone",
          "[mpi]") {
  MpiCommunicator plain(MPI_COMM_WORLD, kWithoutShm);
  MpiCommunicator shm(MPI_COMM_WORLD, MpiOptions{});
  const std::size_t large = dlx::comm::kSharedMemoryAloneBytes / sizeof(float);
  const std::vector<std::size_t> sizes{5, large, 1000};
  const List<float> reference = per_tensor_reference<float>(plain, sizes);
  FusedAllreduce fused(shm);
  std::uint64_t before = shm.shared_memory_pieces();
  List<float> blocking(shm.rank(), sizes);
  fused.allreduce_sum(blocking.tensors());
  CHECK(blocking == reference);
  // Two small buckets ({5}, {1000}) of one piece each; the large tensor in place by MPI.
  CHECK(shm.shared_memory_pieces() - before == (shm_expected() ? 2U : 0U));

  before = shm.shared_memory_pieces();
  List<float> overlapped(shm.rank(), sizes);
  for (const auto& tensor : overlapped.tensors()) fused.add(tensor);
  fused.synchronize();
  CHECK(overlapped == reference);
  CHECK(shm.shared_memory_pieces() - before == (shm_expected() ? 2U : 0U));

  // A 64 KiB bucket: a 256 KiB tensor does not fit and is reduced alone, in place.
  const std::vector<std::size_t> mid{65536, 10};
  const List<float> mid_reference = per_tensor_reference<float>(plain, mid);
  FusedAllreduce small_buckets(shm, std::size_t{64} << 10);
  before = shm.shared_memory_pieces();
  List<float> mid_values(shm.rank(), mid);
  small_buckets.allreduce_sum(mid_values.tensors());
  CHECK(mid_values == mid_reference);
  CHECK(shm.shared_memory_pieces() - before == (shm_expected() ? 1U : 0U));
}
