// SPDX-License-Identifier: Apache-2.0
// load_checkpoint, verify_checkpoint, read_checkpoint_summary: every byte handed out has been
// checked (format version, trial, metadata checksum, tensor CRCs) first. A deferred tensor's
// bytes are checked at the load and again as read_into reads them.
#include <algorithm>
#include <map>
#include <string>

#include <fmt/format.h>

#include "checkpoint_reader.hpp"
#include "dlx/checkpoint/checkpoint.hpp"
#include "h5_boundary.hpp"

namespace dlx::checkpoint {

const Tensor* Checkpoint::find(std::string_view name) const {
  for (const auto& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

const Tensor& Checkpoint::tensor(std::string_view name) const {
  if (const auto* t = find(name)) return *t;
  throw CheckpointError(fmt::format("checkpoint of step {} has no tensor '{}'", metadata.step, name));
}

const TensorInfo* Checkpoint::find_deferred(std::string_view name) const {
  for (const auto& t : deferred)
    if (t.name == name) return &t;
  return nullptr;
}

void Checkpoint::read_into(std::string_view name, std::span<std::byte> out) const {
  const DeferredRead read{name, out};
  read_into(std::span<const DeferredRead>(&read, 1));
}

void Checkpoint::read_into(std::span<const DeferredRead> reads) const {
  std::vector<detail::DeferredTensorRead> list;
  list.reserve(reads.size());
  for (const auto& read : reads) {
    // `deferred` is in name order: a model of many tensors is looked up without a square cost.
    const auto found = std::lower_bound(deferred.begin(), deferred.end(), read.name,
                                        [](const TensorInfo& info, std::string_view name) { return info.name < name; });
    const auto index = static_cast<std::size_t>(found - deferred.begin());
    if (found == deferred.end() || found->name != read.name || !deferred_file) {
      throw CheckpointError(fmt::format("checkpoint of step {} holds no deferred tensor '{}' (only a "
                                        "load asked to defer it leaves its bytes in the file)",
                                        metadata.step, read.name));
    }
    const auto& info = deferred[index];
    if (read.out.size() != info.bytes) {
      throw CheckpointError(fmt::format("tensor '{}' of {} is {} bytes; the memory given for it is {}",
                                        info.name, deferred_file->path.string(), info.bytes,
                                        read.out.size()));
    }
    list.push_back({&info, deferred_file->offsets[index], read.out.data()});
  }
  if (list.empty()) return;  // else deferred_file is set: every read named a deferred tensor
  detail::h5_call([&] { detail::read_deferred_tensors(deferred_file->fd.get(), list, deferred_file->path); });
}

bool Deferral::defers(std::string_view name) const {
  for (const auto& prefix : prefixes)
    if (!prefix.empty() && name.starts_with(prefix)) return true;
  return false;
}

namespace {

// Every tensor is read and checked; the deferred ones through a scratch piece only (their bytes
// stay in the file, and in the page cache, for read_into), the placed ones into the caller's
// memory, host or device.
Checkpoint load(const std::filesystem::path& path, const Expectation& expect, Checkpoint&& reuse,
                const Deferral& defer) {
  return detail::h5_call([&] {
    auto open = detail::open_checkpoint(path, expect);
    std::map<std::string, HostBuffer> spare;
    for (auto& tensor : reuse.tensors)  // the library's own buffers; never a caller's
      if (!tensor.bytes.borrowed()) spare.emplace(std::move(tensor.name), std::move(tensor.bytes));
    reuse.tensors.clear();
    Checkpoint out{open.summary.metadata, open.summary.state, {}, {}, {}, {}};
    std::vector<std::optional<std::uint64_t>> deferred_offsets;
    // Every tensor's memory first (`place` is asked here, on this thread, in name order), then
    // one read of them all.
    std::vector<detail::TensorRead> reads;
    out.tensors.reserve(open.summary.tensors.size());
    for (std::size_t i = 0; i < open.summary.tensors.size(); ++i) {
      const auto& info = open.summary.tensors[i];
      if (defer.defers(info.name)) {
        reads.push_back({i, nullptr});
        out.deferred.push_back(info);
        deferred_offsets.push_back(open.offsets[i]);
        continue;
      }
      if (void* device = defer.place_on_device ? defer.place_on_device(info) : nullptr) {
        reads.push_back({i, nullptr, device});
        out.on_device.push_back({info, device});
        continue;
      }
      std::byte* placed = defer.place ? defer.place(info) : nullptr;
      auto found = spare.find(info.name);
      auto bytes = placed != nullptr ? HostBuffer::borrow(placed, info.bytes)
                   : found != spare.end() && found->second.size() == info.bytes
                       ? std::move(found->second)
                       : HostBuffer::allocate(info.bytes);
      out.tensors.push_back({info.name, info.dtype, info.shape, std::move(bytes)});
      reads.push_back({i, out.tensors.back().bytes.data()});
    }
    detail::read_tensors(open, reads, path);
    if (!out.deferred.empty()) {
      out.deferred_file = std::make_shared<const detail::DeferredFile>(
          detail::DeferredFile{std::move(open.fd), path, std::move(deferred_offsets)});
    }
    return out;
  });
}

}  // namespace

Checkpoint load_checkpoint(const std::filesystem::path& path, const Expectation& expect) {
  return load(path, expect, Checkpoint{}, Deferral{});
}

Checkpoint load_checkpoint(const std::filesystem::path& path, const Expectation& expect,
                           Checkpoint&& reuse) {
  return load(path, expect, std::move(reuse), Deferral{});
}

Checkpoint load_checkpoint(const std::filesystem::path& path, const Expectation& expect,
                           const Deferral& defer) {
  return load(path, expect, Checkpoint{}, defer);
}

CheckpointSummary verify_checkpoint(const std::filesystem::path& path, const Expectation& expect) {
  return detail::h5_call([&] {
    auto open = detail::open_checkpoint(path, expect);
    std::vector<detail::TensorRead> reads;
    for (std::size_t i = 0; i < open.summary.tensors.size(); ++i) reads.push_back({i, nullptr});
    detail::read_tensors(open, reads, path);
    return std::move(open.summary);
  });
}

CheckpointSummary read_checkpoint_summary(const std::filesystem::path& path,
                                          const Expectation& expect) {
  return detail::h5_call(
      [&] { return std::move(detail::open_checkpoint(path, expect).summary); });
}

}  // namespace dlx::checkpoint
