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
    constexpr std::size_t kPage = 4096;
    buffer.data_ = static_cast<std::byte*>(std::aligned_alloc(kPage, (bytes + kPage - 1) / kPage * kPage));
    if (buffer.data_ == nullptr)
      throw CheckpointError(fmt::format("cannot allocate {} bytes of host memory", bytes), ENOMEM);
  }
  return buffer;
}

HostBuffer::~HostBuffer() { release(); }

HostBuffer::HostBuffer(HostBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      pinned_(std::exchange(other.pinned_, false)) {}

HostBuffer& HostBuffer::operator=(HostBuffer&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    pinned_ = std::exchange(other.pinned_, false);
  }
  return *this;
}

void HostBuffer::release() noexcept {
  if (data_ == nullptr) return;
  if (pinned_) detail::free_pinned(data_);
  else std::free(data_);
  data_ = nullptr;
  size_ = 0;
}

}  // namespace dlx::checkpoint
