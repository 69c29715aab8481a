// SPDX-License-Identifier: Apache-2.0
#include <sys/mman.h>

#include <cerrno>
#include <cstdlib>
#include <new>
#include <utility>

#include <fmt/format.h>

#include "device_copy.hpp"
#include "dlx/checkpoint/error.hpp"
#include "dlx/checkpoint/tensor.hpp"

namespace dlx::checkpoint {

std::uint64_t TensorView::element_count() const noexcept {
  std::uint64_t count = 1;
  for (auto extent : shape) count *= extent;
  return count;
}

HostBuffer HostBuffer::allocate(std::size_t bytes, bool pinned) {
  HostBuffer buffer;
  buffer.size_ = bytes;
  if (bytes == 0) return buffer;
  if (pinned) {
    buffer.data_ = static_cast<std::byte*>(detail::allocate_pinned(bytes));
    buffer.pinned_ = buffer.data_ != nullptr;
  }
  if (buffer.data_ == nullptr) {
    // Large buffers (loaded tensors, snapshots) on 2 MiB boundaries, with transparent huge pages
    // asked for: filling a fresh 1 GiB buffer then takes 512 page faults instead of 262144, which
    // is most of what separates a checkpoint load from a plain read into a warm buffer.
    constexpr std::size_t kPage = 4096, kHugePage = std::size_t{2} << 20;
    const std::size_t alignment = bytes >= kHugePage ? kHugePage : kPage;
    const std::size_t rounded = (bytes + alignment - 1) / alignment * alignment;
    buffer.data_ = static_cast<std::byte*>(std::aligned_alloc(alignment, rounded));
    if (buffer.data_ == nullptr)
      throw CheckpointError(fmt::format("cannot allocate {} bytes of host memory", bytes), ENOMEM);
    if (alignment == kHugePage) static_cast<void>(::madvise(buffer.data_, rounded, MADV_HUGEPAGE));
  }
  return buffer;
}

HostBuffer HostBuffer::borrow(std::byte* data, std::size_t bytes) noexcept {
  HostBuffer buffer;
  buffer.data_ = data;
  buffer.size_ = bytes;
  buffer.borrowed_ = true;
  return buffer;
}

HostBuffer::~HostBuffer() { release(); }

HostBuffer::HostBuffer(HostBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      pinned_(std::exchange(other.pinned_, false)),
      borrowed_(std::exchange(other.borrowed_, false)) {}

HostBuffer& HostBuffer::operator=(HostBuffer&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    pinned_ = std::exchange(other.pinned_, false);
    borrowed_ = std::exchange(other.borrowed_, false);
  }
  return *this;
}

void HostBuffer::release() noexcept {
  if (data_ != nullptr && !borrowed_) {
    if (pinned_) detail::free_pinned(data_);
    else std::free(data_);
  }
  data_ = nullptr;
  size_ = 0;
  borrowed_ = false;
}

}  // namespace dlx::checkpoint
