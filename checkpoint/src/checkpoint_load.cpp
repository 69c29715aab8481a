// SPDX-License-Identifier: Apache-2.0
// load_checkpoint, verify_checkpoint, read_checkpoint_summary: every byte handed out has been
// checked (format version, trial, metadata checksum, tensor CRCs) first.
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

Checkpoint load_checkpoint(const std::filesystem::path& path, const Expectation& expect) {
  return load_checkpoint(path, expect, Checkpoint{});
}

Checkpoint load_checkpoint(const std::filesystem::path& path, const Expectation& expect,
                           Checkpoint&& reuse) {
  return detail::h5_call([&] {
    auto open = detail::open_checkpoint(path, expect);
    std::map<std::string, HostBuffer> spare;
    for (auto& tensor : reuse.tensors)
      spare.emplace(std::move(tensor.name), std::move(tensor.bytes));
    reuse.tensors.clear();
    Checkpoint out{open.summary.metadata, open.summary.state, {}};
    for (std::size_t i = 0; i < open.summary.tensors.size(); ++i) {
      const auto& info = open.summary.tensors[i];
      auto found = spare.find(info.name);
      auto bytes = found != spare.end() && found->second.size() == info.bytes
                       ? std::move(found->second)
                       : HostBuffer::allocate(info.bytes);
      Tensor tensor{info.name, info.dtype, info.shape, std::move(bytes)};
      detail::read_tensor(open, i, tensor.bytes.data(), path);
      out.tensors.push_back(std::move(tensor));
    }
    return out;
  });
}

CheckpointSummary verify_checkpoint(const std::filesystem::path& path, const Expectation& expect) {
  return detail::h5_call([&] {
    auto open = detail::open_checkpoint(path, expect);
    for (std::size_t i = 0; i < open.summary.tensors.size(); ++i)
      detail::read_tensor(open, i, nullptr, path);
    return std::move(open.summary);
  });
}

CheckpointSummary read_checkpoint_summary(const std::filesystem::path& path,
                                          const Expectation& expect) {
  return detail::h5_call(
      [&] { return std::move(detail::open_checkpoint(path, expect).summary); });
}

}  // namespace dlx::checkpoint
