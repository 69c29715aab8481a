// SPDX-License-Identifier: Apache-2.0
#pragma once
// The CUDA runtime calls the library needs (pinned memory, device-to-host copies). Built from
// device_copy_cuda.cpp when CMake found CUDA, else from device_copy_none.cpp, which reports that
// this dlx was built without CUDA.
#include <cstddef>
#include <memory>
#include <span>

namespace dlx::checkpoint::detail {

struct DeviceCopy {
  void* host;
  const void* device;
  std::size_t bytes;
};

// Page-locked host memory, or nullptr when CUDA is unavailable (no runtime, no driver, no GPU).
void* allocate_pinned(std::size_t bytes) noexcept;
void free_pinned(void* pointer) noexcept;

// Issues every copy on one stream and waits for all of them; throws CheckpointError.
void copy_from_device(std::span<const DeviceCopy> copies);

// A load's copies into device memory (Deferral::place_on_device): the reading threads take a
// pinned piece, read and checksum a piece of the file into it, and send it to its place on the
// device, on one stream of the device current when the upload was made; a piece is handed out
// again once its copy is done, so pinned memory stays at `pieces` x `piece_bytes` whatever the
// model's size. Thread-safe. Every member throws CheckpointError (the runtime's error, or a dlx
// built without CUDA); the destructor waits for the copies in flight before it frees the pieces.
class DeviceUpload {
 public:
  DeviceUpload(std::size_t pieces, std::size_t piece_bytes);
  ~DeviceUpload();
  DeviceUpload(const DeviceUpload&) = delete;
  DeviceUpload& operator=(const DeviceUpload&) = delete;

  std::byte* take();  // a free piece, piece_bytes long; waits for one when all are busy
  // Queues the copy of the first `bytes` of `piece` (from take()) to `device`; the piece is
  // handed out again once the copy is done.
  void send(std::byte* piece, void* device, std::size_t bytes);
  void finish();  // waits for every copy sent

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace dlx::checkpoint::detail
