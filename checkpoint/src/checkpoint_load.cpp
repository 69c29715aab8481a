// load_checkpoint, verify_checkpoint, read_checkpoint_summary: every byte handed out has been
// checked (format version, trial, metadata checksum, tensor CRCs) first.
#include <fcntl.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <string>

#include <fmt/format.h>

#include "checkpoint_reader.hpp"
#include "dlx/checkpoint/checkpoint.hpp"
#include "dlx/checkpoint/h5/error.hpp"
#include "dlx/common/unique_fd.hpp"

namespace dlx::checkpoint {
namespace {

UniqueFd open_for_reading(const std::filesystem::path& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) {
    int error = errno;
    throw CheckpointError(
        fmt::format("{}: cannot open checkpoint: {}", path.string(), std::strerror(error)), error);
  }
  ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
  return fd;
}

}  // namespace

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
  h5::QuietErrors quiet;
  auto open = detail::open_checkpoint(path, expect);
  auto fd = open_for_reading(path);
  std::map<std::string, HostBuffer> spare;
  for (auto& tensor : reuse.tensors) spare.emplace(std::move(tensor.name), std::move(tensor.bytes));
  reuse.tensors.clear();
  Checkpoint out{open.summary.metadata, open.summary.state, {}};
  for (std::size_t i = 0; i < open.summary.tensors.size(); ++i) {
    const auto& info = open.summary.tensors[i];
    auto found = spare.find(info.name);
    auto bytes = found != spare.end() && found->second.size() == info.bytes
                     ? std::move(found->second)
                     : HostBuffer::allocate(info.bytes);
    Tensor tensor{info.name, info.dtype, info.shape, std::move(bytes)};
    detail::read_tensor(open, i, fd.get(), tensor.bytes.data(), path);
    out.tensors.push_back(std::move(tensor));
  }
  return out;
}

CheckpointSummary verify_checkpoint(const std::filesystem::path& path, const Expectation& expect) {
  h5::QuietErrors quiet;
  auto open = detail::open_checkpoint(path, expect);
  auto fd = open_for_reading(path);
  for (std::size_t i = 0; i < open.summary.tensors.size(); ++i)
    detail::read_tensor(open, i, fd.get(), nullptr, path);
  return std::move(open.summary);
}

CheckpointSummary read_checkpoint_summary(const std::filesystem::path& path,
                                          const Expectation& expect) {
  h5::QuietErrors quiet;
  return std::move(detail::open_checkpoint(path, expect).summary);
}

}  // namespace dlx::checkpoint
