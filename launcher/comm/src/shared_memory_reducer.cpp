// SPDX-License-Identifier: Apache-2.0
#include "shared_memory_reducer.hpp"

#include <algorithm>
#include <concepts>
#include <cstring>
#include <exception>
#include <type_traits>

#include "bucket_packing.hpp"
#include "dlx/comm/mpi_check.hpp"
#include "dlx/comm/mpi_runtime.hpp"

namespace dlx::comm::detail {

namespace {

constexpr std::size_t kLargestElement = 8;  // size_of() of every DataType divides it

// Integers are added as their unsigned type: wrap-around as MPI_SUM does, without signed overflow.
template <class T>
struct Addition {
  using type = T;
};
template <std::integral T>
struct Addition<T> {
  using type = std::make_unsigned_t<T>;
};

// Elements per block of the rank-order sum: compile-time counts, so that g++ -O2 vectorizes the
// loops (its cost model at -O2 only vectorizes a loop whose trip count is a known multiple of the
// vector length), and few enough bytes (8 KiB of int64) that a block stays in L1 from the first
// pass to the copy into the tensor. The rest of a run goes in small blocks (a 1 KiB tensor is a
// run of 256 floats), the last few elements one by one.
constexpr std::size_t kBlockElements = 1024;
constexpr std::size_t kSmallBlockElements = 32;

template <class Add>
inline void add(Add* __restrict out, const Add* __restrict first, const Add* __restrict second,
                std::size_t count) {
  for (std::size_t j = 0; j < count; ++j) out[j] = first[j] + second[j];
}

template <class Add>
inline void accumulate(Add* __restrict out, const Add* __restrict next, std::size_t count) {
  for (std::size_t j = 0; j < count; ++j) out[j] += next[j];
}

// One run of this rank's slice that lies in one tensor (`mine`, this rank's own values):
// out = ((x0 + x1) + x2) + ... in rank order, where x_rank is `mine` and every other x_s is
// segment s at `offset`; out is this rank's segment at `offset` (where the others read it), and
// then `mine` too. Each block is summed pass by pass into `out` (no pass reads what it writes
// through another pointer), then copied into `mine` while it is still in L1.
template <class T>
void sum_rank_order_run(const std::vector<std::byte*>& segments, std::size_t rank,
                        std::size_t offset, std::byte* mine_bytes, std::size_t count) {
  using Add = typename Addition<T>::type;
  auto* mine = reinterpret_cast<Add*>(mine_bytes);
  auto source = [&](std::size_t s) -> const Add* {
    return s == rank ? mine : reinterpret_cast<const Add*>(segments[s] + offset);
  };
  Add* out = reinterpret_cast<Add*>(segments[rank] + offset);
  auto block = [&](std::size_t first, std::size_t length) {
    add(out + first, source(0) + first, source(1) + first, length);
    for (std::size_t s = 2; s < segments.size(); ++s) {
      accumulate(out + first, source(s) + first, length);
    }
    std::memcpy(mine + first, out + first, length * sizeof(Add));
  };
  std::size_t done = 0;
  for (; done + kBlockElements <= count; done += kBlockElements) block(done, kBlockElements);
  for (; done + kSmallBlockElements <= count; done += kSmallBlockElements) {
    block(done, kSmallBlockElements);
  }
  if (done < count) block(done, count - done);
}

}  // namespace

std::unique_ptr<SharedMemoryReducer> SharedMemoryReducer::create(MPI_Comm comm,
                                                                 std::size_t segment_bytes) {
  int rank = 0, size = 1;
  DLX_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  DLX_MPI_CHECK(MPI_Comm_size(comm, &size));
  MPI_Comm node = MPI_COMM_NULL;
  // Key = rank: the node communicator's ranks are the communicator's, in the same order.
  DLX_MPI_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node));
  int node_size = 0;
  DLX_MPI_CHECK(MPI_Comm_size(node, &node_size));
  // The same answer on every rank: either one node group holds all ranks or every group is smaller.
  if (size < 2 || node_size != size) {
    MPI_Comm_free(&node);
    return nullptr;
  }
  DLX_MPI_CHECK(MPI_Comm_set_errhandler(node, MPI_ERRORS_RETURN));

  std::unique_ptr<SharedMemoryReducer> reducer(new SharedMemoryReducer);
  reducer->node_ = node;
  reducer->rank_ = rank;
  reducer->size_ = size;
  reducer->half_bytes_ = std::max(kLargestElement, segment_bytes / 2 / kLargestElement * kLargestElement);

  // Each segment on its own pages: no rank's writes share a cache line with another's segment.
  MPI_Info info = MPI_INFO_NULL;
  DLX_MPI_CHECK(MPI_Info_create(&info));
  MPI_Info_set(info, "alloc_shared_noncontig", "true");
  void* base = nullptr;
  const int created = MPI_Win_allocate_shared(static_cast<MPI_Aint>(2 * reducer->half_bytes_), 1,
                                              info, node, &base, &reducer->window_);
  MPI_Info_free(&info);
  int mine = created == MPI_SUCCESS ? 1 : 0, everywhere = 0;
  DLX_MPI_CHECK(MPI_Allreduce(&mine, &everywhere, 1, MPI_INT, MPI_MIN, node));
  if (everywhere == 0) {
    // A window that exists on some ranks only cannot be freed (MPI_Win_free is collective): it
    // stays mapped until the process ends. The path is then off on every rank.
    reducer->window_ = MPI_WIN_NULL;
    return nullptr;
  }
  DLX_MPI_CHECK(MPI_Win_set_errhandler(reducer->window_, MPI_ERRORS_RETURN));
  reducer->segments_.resize(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r) {
    MPI_Aint bytes = 0;
    int unit = 0;
    void* segment = nullptr;
    DLX_MPI_CHECK(MPI_Win_shared_query(reducer->window_, r, &bytes, &unit, &segment));
    reducer->segments_[static_cast<std::size_t>(r)] = static_cast<std::byte*>(segment);
  }
  // A passive-target epoch for the window's life: MPI_Win_sync is then valid at any time.
  DLX_MPI_CHECK(MPI_Win_lock_all(MPI_MODE_NOCHECK, reducer->window_));
  return reducer;
}

SharedMemoryReducer::~SharedMemoryReducer() {
  // Freeing is collective (MPI_Win_free waits for every rank). While an exception unwinds, or
  // after a peer was given up on, the other ranks may never come: the mapping then stays until exit.
  int finalized = 0;
  if (std::uncaught_exceptions() > 0 || mpi_abandoned() ||
      MPI_Finalized(&finalized) != MPI_SUCCESS || finalized != 0) {
    return;
  }
  if (window_ != MPI_WIN_NULL) {
    MPI_Win_unlock_all(window_);
    MPI_Win_free(&window_);
  }
  if (node_ != MPI_COMM_NULL) MPI_Comm_free(&node_);
}

void SharedMemoryReducer::synchronize() {
  DLX_MPI_CHECK(MPI_Win_sync(window_));  // this rank's stores are visible before the barrier
  DLX_MPI_CHECK(MPI_Barrier(node_));
  DLX_MPI_CHECK(MPI_Win_sync(window_));  // and the others' stores before this rank's loads
}

void SharedMemoryReducer::sum_run(DataType type, std::size_t offset, std::byte* mine,
                                   std::size_t bytes) {
  const auto r = static_cast<std::size_t>(rank_);
  const std::size_t count = bytes / size_of(type);
  auto& segments = segments_;
  switch (type) {
    case DataType::float32: return sum_rank_order_run<float>(segments, r, offset, mine, count);
    case DataType::float64: return sum_rank_order_run<double>(segments, r, offset, mine, count);
    case DataType::int32: return sum_rank_order_run<std::int32_t>(segments, r, offset, mine, count);
    case DataType::int64: return sum_rank_order_run<std::int64_t>(segments, r, offset, mine, count);
    case DataType::uint32:
      return sum_rank_order_run<std::uint32_t>(segments, r, offset, mine, count);
    case DataType::uint64:
      return sum_rank_order_run<std::uint64_t>(segments, r, offset, mine, count);
  }
}

void SharedMemoryReducer::allreduce_sum(std::span<const Tensor> tensors) {
  if (tensors.empty()) return;
  const DataType type = tensors.front().type;
  const std::size_t element = size_of(type);
  const std::size_t total = total_bytes(tensors);
  const auto n = static_cast<std::size_t>(size_);
  const auto r = static_cast<std::size_t>(rank_);
  std::byte* own_segment = segments_[r];
  BucketCursor packer(tensors), summer(tensors), unpacker(tensors);
  for (std::size_t done = 0; done < total; done += half_bytes_) {
    const std::size_t bytes = std::min(half_bytes_, total - done);
    const std::uint64_t piece = pieces_.fetch_add(1, std::memory_order_relaxed);
    const std::size_t half_offset = (piece % 2) * half_bytes_;
    const std::size_t count = bytes / element;
    // Slice s of the piece, in bytes from the piece's start (the cut of ordered_allreduce.cpp).
    auto slice_begin = [&](std::size_t s) { return count * s / n * element; };
    // 1. pack: every slice but this rank's own.
    for (std::size_t s = 0; s < n; ++s) {
      const std::size_t begin = slice_begin(s), length = slice_begin(s + 1) - begin;
      if (s == r) {
        packer.skip(length);
      } else {
        packer.pack_next(length, own_segment + half_offset + begin);
      }
    }
    synchronize();  // 2.
    // 3. sum this rank's slice, from its own tensors and the others' segments.
    const std::size_t mine_begin = slice_begin(r);
    summer.skip(mine_begin);
    summer.walk(slice_begin(r + 1) - mine_begin,
                [&](std::byte* mine, std::size_t at, std::size_t length) {
                  sum_run(type, half_offset + mine_begin + at, mine, length);
                });
    summer.skip(bytes - slice_begin(r + 1));
    synchronize();  // 4.
    // 5. unpack: every other rank's summed slice from its segment.
    for (std::size_t s = 0; s < n; ++s) {
      const std::size_t begin = slice_begin(s), length = slice_begin(s + 1) - begin;
      if (s == r) {
        unpacker.skip(length);
      } else {
        unpacker.unpack_next(length, segments_[s] + half_offset + begin);
      }
    }
  }
}

}  // namespace dlx::comm::detail
