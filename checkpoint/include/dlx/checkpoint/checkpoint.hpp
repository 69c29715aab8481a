// SPDX-License-Identifier: Apache-2.0
#pragma once
// HDF5 checkpoints: one self-describing file per step, trials/<id>/checkpoints/step-<N>.h5
// (docs/checkpoint-format.md). Saves are atomic (temp + fsync + rename + directory fsync); loads
// verify the format version, the trial, a checksum over all metadata and a CRC-32C per block of
// every tensor before handing out any byte. Every failure is a CheckpointError naming the file
// (and the errno when a system call failed); the previous checkpoint is never touched.
//
//   CheckpointContent content;
//   content.metadata = {.experiment = "mnist", .trial_id = 3, .step = 1200};
//   content.state["data_cursor"] = std::int64_t{4800};
//   content.tensors.push_back({"model/weights", DType::float32, {784, 10}, weights.data()});
//   save_checkpoint(content, checkpoint_path(dir, 1200));
//   auto loaded = load_checkpoint(path, {.experiment = "mnist", .trial_id = 3});
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "dlx/checkpoint/error.hpp"
#include "dlx/checkpoint/tensor.hpp"

namespace dlx::checkpoint {

inline constexpr int kCheckpointFormatVersion = 1;

struct CheckpointMetadata {
  std::string experiment;
  std::int64_t trial_id = 0;
  std::int64_t step = 0;
  std::int64_t epoch = 0;
  int world_size = 1;
  nlohmann::ordered_json hparams = nlohmann::ordered_json::object();  // flat: name -> value
  std::string metric_name;            // the searcher metric at this step (keep_best), or ""
  std::optional<double> metric_value;
  // Set by save_checkpoint (created_unix: now when 0); read back by load.
  std::int64_t created_unix = 0;
  std::string library_version;
  int format_version = kCheckpointFormatVersion;
};

// Small named state: data cursor, sample counts, an RNG seed... (RNG stream states and anything
// larger are tensors, e.g. "rng/rank-0/dropout" as uint64 words.)
using StateValue = std::variant<std::int64_t, double, std::string>;
using StateMap = std::map<std::string, StateValue>;

struct CheckpointContent {
  CheckpointMetadata metadata;
  StateMap state;
  std::vector<TensorView> tensors;
  // The cudaStream_t whose queued work writes the device tensors (nullptr: the legacy default
  // stream): they are copied after it, without the host waiting for the stream.
  void* cuda_stream = nullptr;
};

// What a file holds without its tensor bytes (ls, show, retention).
struct TensorInfo {
  std::string name;
  DType dtype = DType::float32;
  std::vector<std::uint64_t> shape;
  std::uint64_t bytes = 0;
  std::vector<std::uint32_t> crc32c;  // one per block of kCrcBlockBytes
};

namespace detail {
struct DeferredFile;  // the open file deferred tensors are read from (checkpoint_load.cpp)
}

// A tensor a load read into CUDA device memory its caller gave (Deferral::place_on_device).
struct DeviceTensor {
  TensorInfo info;
  void* data = nullptr;  // the caller's device memory, info.bytes long; never freed here
};

struct Checkpoint {
  CheckpointMetadata metadata;
  StateMap state;
  std::vector<Tensor> tensors;  // in name order
  // Tensors the load verified but did not keep (Deferral): read_into reads each, when asked,
  // straight into the caller's memory. In name order; empty unless the load was asked to defer.
  std::vector<TensorInfo> deferred;
  // Tensors read into the caller's device memory (Deferral::place_on_device), in name order.
  std::vector<DeviceTensor> on_device;

  const Tensor* find(std::string_view name) const;
  const Tensor& tensor(std::string_view name) const;  // throws CheckpointError when absent
  const TensorInfo* find_deferred(std::string_view name) const;
  // Reads the deferred tensor `name` into `out` (exactly its bytes long), from the descriptor
  // the load verified it through, checking its CRCs again as it reads. Throws CheckpointError
  // when `name` is not deferred, `out` has another size, or the bytes no longer match their
  // checksums (the file was changed after the load verified it): `out` then holds part of them.
  void read_into(std::string_view name, std::span<std::byte> out) const;
  // The same for several tensors at once, their blocks shared out over a few threads (a model of
  // many small tensors reads them in parallel, not one after another). Every name and size is
  // checked before anything is read; the destinations must not overlap. On a checksum error,
  // any of them may hold part of its tensor.
  struct DeferredRead {
    std::string_view name;
    std::span<std::byte> out;
  };
  void read_into(std::span<const DeferredRead> reads) const;

  std::shared_ptr<const detail::DeferredFile> deferred_file;  // set when `deferred` is not empty
};

// Which tensors a load keeps out of its own memory, two ways:
// - deferred: those whose names start with one of `prefixes` ("model/": a model's parameters,
//   which the caller reads straight into the model's own tensors instead of into fresh memory
//   and then copying). They are verified through a scratch piece and stay in the file; the
//   caller then reads each a second time (read_into), from the page cache when the file still
//   fits in it, with its CRCs checked again.
// - placed: any other tensor for which `place` (when set) returns memory of exactly info.bytes
//   that the caller owns (an optimizer's moments, read into the new tensors the optimizer will
//   keep: one read, no copy). The load reads and verifies it there, and the Checkpoint's Tensor
//   refers to that memory without owning it (HostBuffer::borrow): it must outlive the
//   Checkpoint. `place` is called once per tensor of every file the load tries, on the loading
//   thread; nullptr means the library's own memory. What a refused file (damaged, of another
//   trial) wrote there is not a tensor: placed memory should be new, never state the caller
//   still uses, which is what deferral is for.
// - placed on the device: any other tensor for which `place_on_device` (when set; asked before
//   `place`) returns CUDA device memory of exactly info.bytes on the calling thread's current
//   device, new like placed memory (a CUDA model's parameters and an optimizer's moments, read
//   into new device tensors: one read of the file, no host memory of the size of the state). Each
//   piece is read into a small pool of pinned pieces, checksummed there and copied to the device
//   on a stream of the load's, overlapping the next reads; the load returns after the last copy.
//   A dlx built without CUDA refuses such a load (CheckpointError).
// Verification is unchanged: every byte of every tensor is checked before the load returns, so
// a damaged file is refused before the caller changes anything.
struct Deferral {
  std::vector<std::string> prefixes;
  std::function<std::byte*(const TensorInfo&)> place = nullptr;
  std::function<void*(const TensorInfo&)> place_on_device = nullptr;
  bool defers(std::string_view name) const;
};

struct CheckpointSummary {
  CheckpointMetadata metadata;
  StateMap state;
  std::vector<TensorInfo> tensors;  // in name order
};

// What the reader requires of a file beyond being an intact dlx checkpoint.
struct Expectation {
  std::optional<std::string> experiment;
  std::optional<std::int64_t> trial_id;
  // false: refuse a symbolic link at the path (O_NOFOLLOW). Discovery sets it: dlx writes its
  // checkpoints as regular files, so a link in a checkpoint directory was put there by hand.
  bool follow_symlink = true;
};

inline constexpr std::uint64_t kCrcBlockBytes = 16u << 20;

// <directory>/step-<step>.h5
std::filesystem::path checkpoint_path(const std::filesystem::path& directory, std::int64_t step);

// Writes `content` durably to `path` (replacing an older file of that name atomically). Device
// tensors are copied to host first; the caller has finished writing them (synchronised streams).
void save_checkpoint(const CheckpointContent& content, const std::filesystem::path& path);

// Reading treats the file as hostile input: only a regular file is opened (a FIFO or device is
// refused, never waited on), soft and external links inside it are refused, and what it declares
// is checked against dlx::h5's limits (h5/include/dlx/h5/limits.hpp) and against the file's size
// before anything is allocated (docs/checkpoint-format.md, "Limits").
//
// Reads and verifies everything; throws CheckpointError saying what is wrong.
Checkpoint load_checkpoint(const std::filesystem::path& path, const Expectation& expect = {});
// The same, reusing the host buffers of `reuse` (a checkpoint loaded before) for tensors of the
// same name and byte size: a process that loads repeatedly pays for fresh memory (page faults,
// zeroing: about as much as the read itself) only once. `reuse` is left empty.
Checkpoint load_checkpoint(const std::filesystem::path& path, const Expectation& expect,
                           Checkpoint&& reuse);
// The same, verifying but not keeping the tensors `defer` names (Checkpoint::deferred).
Checkpoint load_checkpoint(const std::filesystem::path& path, const Expectation& expect,
                           const Deferral& defer);

// Reads and verifies the metadata and the tensor index (not the tensor bytes).
CheckpointSummary read_checkpoint_summary(const std::filesystem::path& path,
                                          const Expectation& expect = {});

// Full verification without keeping the data: throws CheckpointError like load_checkpoint.
CheckpointSummary verify_checkpoint(const std::filesystem::path& path,
                                    const Expectation& expect = {});

}  // namespace dlx::checkpoint
