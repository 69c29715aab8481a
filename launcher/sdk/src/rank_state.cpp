// SPDX-License-Identifier: Apache-2.0
#include "rank_state.hpp"

#include <cstdint>
#include <cstring>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "dlx/common/little_endian.hpp"
#include "dlx/comm/mpi_check.hpp"

namespace dlx::detail {

namespace {

constexpr std::size_t kLengthBytes = sizeof(std::uint64_t);

[[noreturn]] void malformed(int rank, const std::string& why) {
  throw CheckpointingError(
      fmt::format("dlx: the per-rank checkpoint state of rank {} is malformed: {}", rank, why));
}

int checked_int(std::size_t value, const char* what) {
  if (value > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
    throw CheckpointingError(fmt::format(
        "dlx: per-rank checkpoint state too large to gather: {} is {} bytes (above 2 GiB; save "
        "large per-rank tensors as replicated state or shard the checkpoint)", what, value));
  }
  return static_cast<int>(value);
}

}  // namespace

std::string pack_rank_state(const TrainingState& state) {
  nlohmann::json header{{"tensors", nlohmann::json::array()}, {"rng", nlohmann::json::array()}};
  std::size_t payload = 0;
  for (const auto& tensor : state.rank_tensors) {
    if (tensor.location != checkpoint::MemoryLocation::host) {
      throw CheckpointingError(fmt::format(
          "dlx: per-rank checkpoint tensor '{}' is in device memory; per-rank state must be host "
          "memory (copy it to the host, or save it as a replicated tensor)", tensor.name));
    }
    header["tensors"].push_back({tensor.name, std::string(checkpoint::dtype_name(tensor.dtype)),
                                 tensor.shape, tensor.byte_size()});
    payload += tensor.byte_size();
  }
  for (const auto& [name, bytes] : state.rng_streams) {
    header["rng"].push_back({name, bytes.size()});
    payload += bytes.size();
  }
  const std::string text = header.dump();
  std::string out;
  out.reserve(kLengthBytes + text.size() + payload);
  append_little_endian<std::uint64_t>(out, text.size());
  out += text;
  for (const auto& tensor : state.rank_tensors) {
    out.append(static_cast<const char*>(tensor.data), tensor.byte_size());
  }
  for (const auto& [name, bytes] : state.rng_streams) out += bytes;
  return out;
}

std::vector<checkpoint::TensorView> unpack_rank_state(int rank, const std::string& packed) {
  if (packed.size() < kLengthBytes) malformed(rank, "shorter than its header length");
  const auto header_length = read_little_endian<std::uint64_t>(packed);
  if (header_length > packed.size() - kLengthBytes) malformed(rank, "header longer than the data");
  auto header = nlohmann::json::parse(packed.substr(kLengthBytes, header_length), nullptr, false);
  if (header.is_discarded() || !header.is_object()) malformed(rank, "header is not JSON");
  std::size_t offset = kLengthBytes + header_length;
  std::vector<checkpoint::TensorView> views;
  auto take = [&](std::size_t bytes) {
    if (bytes > packed.size() - offset) malformed(rank, "tensor bytes past the end");
    const char* at = packed.data() + offset;
    offset += bytes;
    return at;
  };
  try {
    for (const auto& item : header.at("tensors")) {
      checkpoint::TensorView view;
      view.name = rank_tensor_name(rank, item.at(0).get<std::string>());
      auto dtype = checkpoint::dtype_from_name(item.at(1).get<std::string>());
      if (!dtype) malformed(rank, "unknown dtype " + item.at(1).dump());
      view.dtype = *dtype;
      view.shape = item.at(2).get<std::vector<std::uint64_t>>();
      const auto bytes = item.at(3).get<std::size_t>();
      if (bytes != view.byte_size()) malformed(rank, "byte count does not match the shape");
      view.data = take(bytes);
      views.push_back(std::move(view));
    }
    for (const auto& item : header.at("rng")) {
      checkpoint::TensorView view;
      view.name = rng_tensor_name(rank, item.at(0).get<std::string>());
      view.dtype = checkpoint::DType::uint8;
      const auto bytes = item.at(1).get<std::size_t>();
      view.shape = {bytes};
      view.data = take(bytes);
      views.push_back(std::move(view));
    }
  } catch (const nlohmann::json::exception& error) {
    malformed(rank, error.what());
  }
  return views;
}

std::vector<std::string> gather_to_root(const std::string& mine, int root, MPI_Comm comm) {
  int rank = 0, size = 1;
  DLX_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  DLX_MPI_CHECK(MPI_Comm_size(comm, &size));
  int length = checked_int(mine.size(), "this rank's state");
  std::vector<int> lengths(rank == root ? static_cast<std::size_t>(size) : 0);
  DLX_MPI_CHECK(MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, root, comm));
  std::vector<int> offsets(lengths.size());
  std::size_t total = 0;
  for (std::size_t i = 0; i < lengths.size(); ++i) {
    offsets[i] = checked_int(total, "the gathered state");
    total += static_cast<std::size_t>(lengths[i]);
  }
  checked_int(total, "the gathered state");
  std::string all(total, '\0');
  DLX_MPI_CHECK(MPI_Gatherv(mine.data(), length, MPI_BYTE, all.data(), lengths.data(),
                            offsets.data(), MPI_BYTE, root, comm));
  std::vector<std::string> out;
  for (std::size_t i = 0; i < lengths.size(); ++i) {
    out.push_back(all.substr(static_cast<std::size_t>(offsets[i]),
                             static_cast<std::size_t>(lengths[i])));
  }
  return out;
}

}  // namespace dlx::detail
