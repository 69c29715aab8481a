// SPDX-License-Identifier: Apache-2.0
#pragma once
// The CUDA runtime calls the library needs (pinned memory, copies between device and host). Built from
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

// The point in a stream's work after which a snapshot copies device tensors: an event recorded on
// `stream` (a cudaStream_t; nullptr: the legacy default stream) when marked, with the device then
// current. The snapshot's own streams wait for that event, so neither the caller nor the copies
// wait for the stream's later work, and the host never waits for the trainer's stream.
class StreamPoint {
 public:
  StreamPoint() noexcept = default;
  static StreamPoint mark(void* stream);  // throws CheckpointError
  ~StreamPoint();
  StreamPoint(StreamPoint&& other) noexcept;
  StreamPoint& operator=(StreamPoint&& other) noexcept;
  StreamPoint(const StreamPoint&) = delete;
  StreamPoint& operator=(const StreamPoint&) = delete;

  void* event() const noexcept { return event_; }  // a cudaEvent_t; nullptr when never marked
  int device() const noexcept { return device_; }

 private:
  void* event_ = nullptr;
  int device_ = 0;
};

/*
 * DeviceDownload: a snapshot's device-to-host copies, through a few pinned pieces of its own
 * into the snapshot's ordinary (pageable) host buffers, so that pinned memory stays at
 * kPiecesPerThread x kPieceBytes per copying thread (64 MiB at most) whatever the model's size.
 *
 * The copies are cut into loads of at most one piece (a large tensor in piece-sized parts, small
 * tensors packed several to a piece) and dealt to up to four threads (host_copy_threads of the
 * device bytes). Each thread has its own stream, which first waits for the StreamPoint's event,
 * and two pieces: it queues load j's copies into piece j % 2 and records that piece's event,
 * then waits for the other piece's event and copies its bytes on to their host buffers, so that
 * the device-to-host copy of one piece overlaps the host copy of the other. The pieces are kept
 * from one snapshot to the next (allocating pinned memory costs about as much as copying into
 * it). One snapshot at a time; copy() returns when every byte is in its host buffer, having
 * waited for the streams on every path out, so no copy writes a piece after a failure.
 */
class DeviceDownload {
 public:
  static constexpr std::size_t kPieceBytes = std::size_t{8} << 20;
  static constexpr std::size_t kPiecesPerThread = 2;

  DeviceDownload();
  ~DeviceDownload();
  DeviceDownload(const DeviceDownload&) = delete;
  DeviceDownload& operator=(const DeviceDownload&) = delete;

  // Throws CheckpointError (the runtime's error, or a dlx built without CUDA).
  void copy(std::span<const DeviceCopy> copies, const StreamPoint& after);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

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
