// SPDX-License-Identifier: Apache-2.0
// device_copy.hpp through the CUDA runtime (CUDA::cudart only, never the driver library).
#include <cuda_runtime.h>

#include <condition_variable>
#include <mutex>
#include <vector>

#include <fmt/format.h>

#include "device_copy.hpp"
#include "dlx/checkpoint/error.hpp"
#include "dlx/common/cuda_check.hpp"

namespace dlx::checkpoint::detail {
namespace {

// DLX_CUDA_CHECK's handler here: the failed call, where, and the runtime's text and name.
[[noreturn]] void snapshot_failed(const CudaFailure& failure) {
  throw CheckpointError(fmt::format("snapshot of device tensors: {} failed at {}:{}: {} ({})", failure.call,
                                    failure.file, failure.line, cudaGetErrorString(failure.error),
                                    cudaGetErrorName(failure.error)));
}

[[noreturn]] void upload_failed(const CudaFailure& failure) {
  throw DeviceLoadError(fmt::format("load into device memory: {} failed at {}:{}: {} ({})",
                                    failure.call, failure.file, failure.line,
                                    cudaGetErrorString(failure.error), cudaGetErrorName(failure.error)));
}

// Destroys the stream on every path out of copy_from_device.
struct Stream {
  cudaStream_t id = nullptr;
  ~Stream() {
    if (id != nullptr) cudaStreamDestroy(id);
  }
};

}  // namespace

}  // namespace dlx::checkpoint::detail

namespace dlx::checkpoint {

void wait_for_cuda_stream(void* stream) {
  DLX_CUDA_CHECK(detail::snapshot_failed, cudaStreamSynchronize(static_cast<cudaStream_t>(stream)));
}

}  // namespace dlx::checkpoint

namespace dlx::checkpoint::detail {

void* allocate_pinned(std::size_t bytes) noexcept {
  void* pointer = nullptr;
  if (cudaHostAlloc(&pointer, bytes, cudaHostAllocDefault) != cudaSuccess) {
    cudaGetLastError();  // no driver or no GPU: the caller falls back to pageable memory
    return nullptr;
  }
  return pointer;
}

void free_pinned(void* pointer) noexcept {
  if (pointer != nullptr) cudaFreeHost(pointer);
}

void copy_from_device(std::span<const DeviceCopy> copies) {
  if (copies.empty()) return;
  Stream stream;
  DLX_CUDA_CHECK(snapshot_failed, cudaStreamCreateWithFlags(&stream.id, cudaStreamNonBlocking));
  for (const auto& copy : copies)
    DLX_CUDA_CHECK(snapshot_failed,
                   cudaMemcpyAsync(copy.host, copy.device, copy.bytes, cudaMemcpyDeviceToHost, stream.id));
  DLX_CUDA_CHECK(snapshot_failed, cudaStreamSynchronize(stream.id));
}

}  // namespace dlx::checkpoint::detail

namespace dlx::checkpoint::detail {

/*
 * DeviceUpload's pieces: each is free (neither held nor copying), held by a reading thread
 * (in_use, between take() and send()), or in flight (its copy queued; `sent` recorded after it).
 * take() prefers a free piece and otherwise waits for the event of one in flight, outside the
 * lock; with twice as many pieces as reading threads, a thread almost always finds its next
 * piece's copy long done (a 1 MiB copy takes ~20 us, reading and checksumming it ~500 us).
 */
struct DeviceUpload::State {
  struct Piece {
    std::byte* memory = nullptr;
    cudaEvent_t sent = nullptr;
    bool in_use = false;
    bool in_flight = false;
  };
  int device = 0;
  cudaStream_t stream = nullptr;
  std::vector<Piece> pieces;
  std::mutex mutex;
  std::condition_variable released;

  ~State() {
    if (stream != nullptr) cudaStreamSynchronize(stream);  // no copy may read a freed piece
    for (auto& piece : pieces) {
      if (piece.sent != nullptr) cudaEventDestroy(piece.sent);
      if (piece.memory != nullptr) cudaFreeHost(piece.memory);
    }
    if (stream != nullptr) cudaStreamDestroy(stream);
  }
};

DeviceUpload::DeviceUpload(std::size_t pieces, std::size_t piece_bytes)
    : state_(std::make_unique<State>()) {
  DLX_CUDA_CHECK(upload_failed, cudaGetDevice(&state_->device));
  DLX_CUDA_CHECK(upload_failed, cudaStreamCreateWithFlags(&state_->stream, cudaStreamNonBlocking));
  state_->pieces.resize(pieces);
  for (auto& piece : state_->pieces) {
    void* memory = nullptr;
    DLX_CUDA_CHECK(upload_failed, cudaHostAlloc(&memory, piece_bytes, cudaHostAllocDefault));
    piece.memory = static_cast<std::byte*>(memory);
    DLX_CUDA_CHECK(upload_failed, cudaEventCreateWithFlags(&piece.sent, cudaEventDisableTiming));
  }
}

DeviceUpload::~DeviceUpload() = default;

std::byte* DeviceUpload::take() {
  std::unique_lock lock(state_->mutex);
  while (true) {
    State::Piece* pick = nullptr;
    for (auto& piece : state_->pieces) {
      if (piece.in_use) continue;
      if (!piece.in_flight) {
        pick = &piece;
        break;
      }
      if (pick == nullptr) pick = &piece;
    }
    if (pick != nullptr) {
      const bool wait = pick->in_flight;
      pick->in_use = true;
      pick->in_flight = false;
      lock.unlock();
      if (wait) DLX_CUDA_CHECK(upload_failed, cudaEventSynchronize(pick->sent));
      return pick->memory;
    }
    state_->released.wait(lock);
  }
}

void DeviceUpload::send(std::byte* memory, void* device, std::size_t bytes) {
  State::Piece* piece = nullptr;
  for (auto& candidate : state_->pieces)
    if (candidate.memory == memory) piece = &candidate;
  if (piece == nullptr) throw DeviceLoadError("load into device memory: a piece not from take()");
  // A reading thread's current device may be another one than the stream's.
  DLX_CUDA_CHECK(upload_failed, cudaSetDevice(state_->device));
  DLX_CUDA_CHECK(upload_failed,
                 cudaMemcpyAsync(device, memory, bytes, cudaMemcpyHostToDevice, state_->stream));
  DLX_CUDA_CHECK(upload_failed, cudaEventRecord(piece->sent, state_->stream));
  {
    std::lock_guard lock(state_->mutex);
    piece->in_use = false;
    piece->in_flight = true;
  }
  state_->released.notify_one();
}

void DeviceUpload::finish() {
  DLX_CUDA_CHECK(upload_failed, cudaStreamSynchronize(state_->stream));
}

}  // namespace dlx::checkpoint::detail
