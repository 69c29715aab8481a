// SPDX-License-Identifier: Apache-2.0
// device_copy.hpp through the CUDA runtime (CUDA::cudart only, never the driver library).
#include <cuda_runtime.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "device_copy.hpp"
#include "download_plan.hpp"
#include "host_copy.hpp"
#include "dlx/checkpoint/error.hpp"
#include "dlx/common/cuda_check.hpp"
#include "dlx/common/parallel_for.hpp"

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

// A stream of its own for one copying thread: waited for and destroyed on every path out, so
// that no copy still queued writes into a piece after the thread has gone.
struct OwnStream {
  cudaStream_t id = nullptr;
  ~OwnStream() {
    if (id != nullptr) {
      cudaStreamSynchronize(id);
      cudaStreamDestroy(id);
    }
  }
};

struct OwnEvent {
  cudaEvent_t id = nullptr;
  ~OwnEvent() {
    if (id != nullptr) cudaEventDestroy(id);
  }
};

}  // namespace

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

StreamPoint StreamPoint::mark(void* stream) {
  StreamPoint point;
  int device = 0;
  DLX_CUDA_CHECK(snapshot_failed, cudaGetDevice(&device));
  point.device_ = device;
  cudaEvent_t event = nullptr;
  DLX_CUDA_CHECK(snapshot_failed, cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  point.event_ = event;
  DLX_CUDA_CHECK(snapshot_failed, cudaEventRecord(event, static_cast<cudaStream_t>(stream)));
  return point;
}

StreamPoint::~StreamPoint() {
  if (event_ != nullptr) cudaEventDestroy(static_cast<cudaEvent_t>(event_));
}

StreamPoint::StreamPoint(StreamPoint&& other) noexcept
    : event_(std::exchange(other.event_, nullptr)), device_(other.device_) {}

StreamPoint& StreamPoint::operator=(StreamPoint&& other) noexcept {
  if (this != &other) {
    if (event_ != nullptr) cudaEventDestroy(static_cast<cudaEvent_t>(event_));
    event_ = std::exchange(other.event_, nullptr);
    device_ = other.device_;
  }
  return *this;
}

struct DeviceDownload::State {
  std::vector<std::byte*> pieces;  // pinned, kPieceBytes each; kept between snapshots
  ~State() {
    for (auto* piece : pieces) cudaFreeHost(piece);
  }
};

DeviceDownload::DeviceDownload() : state_(std::make_unique<State>()) {}
DeviceDownload::~DeviceDownload() = default;

void DeviceDownload::copy(std::span<const DeviceCopy> copies, const StreamPoint& after) {
  std::size_t total = 0;
  for (const auto& copy : copies) total += copy.bytes;
  if (total == 0) return;
  const auto plan = plan_download(copies, kPieceBytes);
  const std::size_t threads = std::min<std::size_t>(host_copy_threads(total), plan.loads());
  DLX_CUDA_CHECK(snapshot_failed, cudaSetDevice(after.device()));
  while (state_->pieces.size() < threads * kPiecesPerThread) {
    void* piece = nullptr;
    DLX_CUDA_CHECK(snapshot_failed, cudaHostAlloc(&piece, kPieceBytes, cudaHostAllocDefault));
    state_->pieces.push_back(static_cast<std::byte*>(piece));
  }
  parallel_for(threads, threads, [&](std::size_t thread) {
    DLX_CUDA_CHECK(snapshot_failed, cudaSetDevice(after.device()));
    OwnStream stream;
    DLX_CUDA_CHECK(snapshot_failed, cudaStreamCreateWithFlags(&stream.id, cudaStreamNonBlocking));
    if (after.event() != nullptr)
      DLX_CUDA_CHECK(snapshot_failed,
                     cudaStreamWaitEvent(stream.id, static_cast<cudaEvent_t>(after.event()), 0));
    std::byte* piece[kPiecesPerThread];
    OwnEvent copied[kPiecesPerThread];
    std::size_t pending[kPiecesPerThread];  // the load in each piece, or plan.loads() for none
    for (std::size_t k = 0; k < kPiecesPerThread; ++k) {
      piece[k] = state_->pieces[thread * kPiecesPerThread + k];
      DLX_CUDA_CHECK(snapshot_failed,
                     cudaEventCreateWithFlags(&copied[k].id, cudaEventDisableTiming));
      pending[k] = plan.loads();
    }
    auto unload = [&](std::size_t k) {
      if (pending[k] == plan.loads()) return;
      DLX_CUDA_CHECK(snapshot_failed, cudaEventSynchronize(copied[k].id));
      for (const auto& part : plan.load(pending[k]))
        std::memcpy(part.host, piece[k] + part.offset, part.bytes);
      pending[k] = plan.loads();
    };
    // Thread t takes loads t, t + threads, ...: neighbouring loads on different threads, so that
    // the copy engine has the next piece queued while a thread copies its last one on.
    std::size_t turn = 0;
    for (auto load = thread; load < plan.loads(); load += threads, ++turn) {
      const auto k = turn % kPiecesPerThread;
      unload(k);
      for (const auto& part : plan.load(load)) {
        DLX_CUDA_CHECK(snapshot_failed,
                       cudaMemcpyAsync(piece[k] + part.offset, part.device, part.bytes,
                                       cudaMemcpyDeviceToHost, stream.id));
      }
      DLX_CUDA_CHECK(snapshot_failed, cudaEventRecord(copied[k].id, stream.id));
      pending[k] = load;
    }
    for (std::size_t k = 0; k < kPiecesPerThread; ++k) unload((turn + k) % kPiecesPerThread);
  });
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
