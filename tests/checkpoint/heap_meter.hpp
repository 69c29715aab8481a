// SPDX-License-Identifier: Apache-2.0
#pragma once
// The heap a piece of code holds at its peak, for tests that bound a reader's memory by its
// input's size (issue 31): linking heap_meter.cpp replaces operator new and delete for the whole
// program with ones that count the bytes live (malloc_usable_size) and their high-water mark.
// Only C++ allocations are counted (libhdf5's malloc is not); the readers measured here allocate
// what a file makes them allocate through std::vector and std::string.
#include <cstddef>
#include <functional>

namespace dlx::testing {

// Bytes allocated through operator new and not yet deleted.
std::size_t live_heap_bytes() noexcept;

// Runs `action` and returns the most bytes it held at once above what was live when it started
// (what it still holds at the end counts too). Not reentrant; single-threaded use.
std::size_t peak_heap_bytes_during(const std::function<void()>& action);

}  // namespace dlx::testing
