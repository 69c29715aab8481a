// SPDX-License-Identifier: Apache-2.0
// Replacement operator new/delete that count live bytes and their peak (heap_meter.hpp).
#include "heap_meter.hpp"

#include <malloc.h>

#include <atomic>
#include <cstdlib>
#include <new>

namespace {

std::atomic<std::size_t> live{0};
std::atomic<std::size_t> peak{0};

void* counted(void* block) {
  if (block == nullptr) return nullptr;
  const auto bytes = ::malloc_usable_size(block);
  const auto now = live.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  auto seen = peak.load(std::memory_order_relaxed);
  while (now > seen && !peak.compare_exchange_weak(seen, now, std::memory_order_relaxed)) {
  }
  return block;
}

void* allocate(std::size_t size) {
  if (void* block = counted(std::malloc(size == 0 ? 1 : size))) return block;
  throw std::bad_alloc();
}

void* allocate_aligned(std::size_t size, std::align_val_t alignment) {
  const auto align = static_cast<std::size_t>(alignment);
  const auto rounded = (size + align - 1) / align * align;
  if (void* block = counted(std::aligned_alloc(align, rounded == 0 ? align : rounded))) return block;
  throw std::bad_alloc();
}

void release(void* block) noexcept {
  if (block == nullptr) return;
  live.fetch_sub(::malloc_usable_size(block), std::memory_order_relaxed);
  std::free(block);
}

}  // namespace

void* operator new(std::size_t size) { return allocate(size); }
void* operator new[](std::size_t size) { return allocate(size); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept { return counted(std::malloc(size == 0 ? 1 : size)); }
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept { return counted(std::malloc(size == 0 ? 1 : size)); }
void* operator new(std::size_t size, std::align_val_t alignment) { return allocate_aligned(size, alignment); }
void* operator new[](std::size_t size, std::align_val_t alignment) { return allocate_aligned(size, alignment); }
void operator delete(void* block) noexcept { release(block); }
void operator delete[](void* block) noexcept { release(block); }
void operator delete(void* block, std::size_t) noexcept { release(block); }
void operator delete[](void* block, std::size_t) noexcept { release(block); }
void operator delete(void* block, std::align_val_t) noexcept { release(block); }
void operator delete[](void* block, std::align_val_t) noexcept { release(block); }
void operator delete(void* block, std::size_t, std::align_val_t) noexcept { release(block); }
void operator delete[](void* block, std::size_t, std::align_val_t) noexcept { release(block); }

namespace dlx::testing {

std::size_t live_heap_bytes() noexcept { return live.load(std::memory_order_relaxed); }

std::size_t peak_heap_bytes_during(const std::function<void()>& action) {
  const auto before = live.load(std::memory_order_relaxed);
  peak.store(before, std::memory_order_relaxed);
  action();
  return peak.load(std::memory_order_relaxed) - before;
}

}  // namespace dlx::testing
