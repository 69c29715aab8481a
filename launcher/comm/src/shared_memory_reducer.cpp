#include "shared_memory_reducer.hpp"

#include <algorithm>
#include <concepts>
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

// Slice [first, last) of segment 0 becomes x0 + x1 + ... + x(n-1), added in rank order. The
// first pass reads element j of segment 0 before writing it, so writing in place is safe.
template <class T>
void sum_in_rank_order(const std::vector<std::byte*>& segments, std::size_t offset,
                       std::size_t first, std::size_t last) {
  using Add = typename Addition<T>::type;
  auto at = [&](std::size_t rank) { return reinterpret_cast<Add*>(segments[rank] + offset) + first; };
  const std::size_t length = last - first;
  Add* out = at(0);
  const Add* second = at(1);
  for (std::size_t j = 0; j < length; ++j) out[j] = out[j] + second[j];
  for (std::size_t rank = 2; rank < segments.size(); ++rank) {
    const Add* next = at(rank);
    for (std::size_t j = 0; j < length; ++j) out[j] += next[j];
  }
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

void SharedMemoryReducer::sum_slice(DataType type, std::size_t half_offset, std::size_t count) {
  const auto n = static_cast<std::size_t>(size_);
  const auto r = static_cast<std::size_t>(rank_);
  const std::size_t first = count * r / n;  // the cut of ordered_allreduce.cpp
  const std::size_t last = count * (r + 1) / n;
  if (first == last) return;
  switch (type) {
    case DataType::float32: return sum_in_rank_order<float>(segments_, half_offset, first, last);
    case DataType::float64: return sum_in_rank_order<double>(segments_, half_offset, first, last);
    case DataType::int32: return sum_in_rank_order<std::int32_t>(segments_, half_offset, first, last);
    case DataType::int64: return sum_in_rank_order<std::int64_t>(segments_, half_offset, first, last);
    case DataType::uint32: return sum_in_rank_order<std::uint32_t>(segments_, half_offset, first, last);
    case DataType::uint64: return sum_in_rank_order<std::uint64_t>(segments_, half_offset, first, last);
  }
}

void SharedMemoryReducer::allreduce_sum(std::span<const Tensor> tensors) {
  if (tensors.empty()) return;
  const DataType type = tensors.front().type;
  const std::size_t total = total_bytes(tensors);
  BucketCursor packer(tensors), unpacker(tensors);
  for (std::size_t done = 0; done < total; done += half_bytes_) {
    const std::size_t bytes = std::min(half_bytes_, total - done);
    const std::size_t half_offset = (pieces_++ % 2) * half_bytes_;
    packer.pack_next(bytes, segments_[static_cast<std::size_t>(rank_)] + half_offset);
    synchronize();
    sum_slice(type, half_offset, bytes / size_of(type));
    synchronize();
    unpacker.unpack_next(bytes, segments_[0] + half_offset);
  }
}

}  // namespace dlx::comm::detail
