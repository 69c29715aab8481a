// read_tensor: the bytes of one tensor, straight from the file offset HDF5 reports for its
// contiguous dataset (pread, block by block), each block checksummed by a worker thread while the
// next one is read. Datasets without a single offset (written by another tool) go through H5Dread.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <future>

#include <fmt/format.h>

#include "checkpoint_reader.hpp"
#include "crc32c.hpp"
#include "dlx/checkpoint/h5/error.hpp"
#include "dlx/checkpoint/h5/types.hpp"

namespace dlx::checkpoint::detail {
namespace {

void read_exactly(int fd, std::byte* out, std::uint64_t bytes, std::uint64_t offset,
                  const std::string& what, const std::filesystem::path& path) {
  std::uint64_t done = 0;
  while (done < bytes) {
    auto n = ::pread(fd, out + done, bytes - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      int error = errno;
      throw CheckpointError(fmt::format("{}: cannot read {}: {}", path.string(), what,
                                        std::strerror(error)),
                            error);
    }
    if (n == 0)
      h5::throw_format_error(path, fmt::format("{} ends past the end of the file (truncated)", what));
    done += static_cast<std::uint64_t>(n);
  }
}

void compare(const TensorInfo& info, const std::vector<std::uint32_t>& actual,
             const std::filesystem::path& path) {
  for (std::size_t i = 0; i < actual.size(); ++i)
    if (actual[i] != info.crc32c[i])
      h5::throw_format_error(
          path, fmt::format("checksum mismatch in tensor '{}' (block {} of {}: CRC-32C {:08x}, "
                            "stored {:08x}): the file is damaged",
                            info.name, i, actual.size(), actual[i], info.crc32c[i]));
}

// H5Dread of the whole dataset, for layouts without a single file offset.
void read_through_hdf5(const OpenCheckpoint& checkpoint, const TensorInfo& info,
                       std::byte* destination, const std::filesystem::path& path) {
  std::vector<std::byte> scratch;
  if (destination == nullptr) {
    scratch.resize(info.bytes);
    destination = scratch.data();
  }
  auto name = "/tensors/" + info.name;
  h5::Handle dataset(h5::check_id(H5Dopen2(checkpoint.file.get(), name.c_str(), H5P_DEFAULT),
                                  path, "open dataset " + name),
                     H5Dclose);
  auto type = h5::file_type_of(info.dtype, path);
  h5::check(H5Dread(dataset.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, destination), path,
            "read dataset " + name);
  compare(info, block_crc32c({destination, info.bytes}, checksum_threads()), path);
}

}  // namespace

void read_tensor(const OpenCheckpoint& checkpoint, std::size_t index, int fd,
                 std::byte* destination, const std::filesystem::path& path) {
  const auto& info = checkpoint.summary.tensors[index];
  if (info.bytes == 0) return compare(info, {crc32c({})}, path);
  const auto& offset = checkpoint.offsets[index];
  if (!offset) return read_through_hdf5(checkpoint, info, destination, path);

  auto blocks = crc_block_count(info.bytes);
  auto workers = std::max<std::size_t>(1, checksum_threads());
  // Verify-only: a ring of workers + 1 block buffers; a buffer is reused only after its
  // checksum finished (at most `workers` checksums are in flight).
  std::vector<std::vector<std::byte>> ring;
  if (destination == nullptr)
    ring.resize(std::min(blocks, workers + 1),
                std::vector<std::byte>(std::min<std::uint64_t>(info.bytes, kCrcBlockBytes)));
  std::vector<std::uint32_t> actual(blocks);
  std::deque<std::future<void>> in_flight;
  auto what = fmt::format("tensor '{}'", info.name);
  for (std::size_t i = 0; i < blocks; ++i) {
    if (in_flight.size() >= workers) {
      in_flight.front().get();
      in_flight.pop_front();
    }
    auto begin = i * kCrcBlockBytes;
    auto length = std::min<std::uint64_t>(kCrcBlockBytes, info.bytes - begin);
    std::byte* out = destination != nullptr ? destination + begin : ring[i % ring.size()].data();
    read_exactly(fd, out, length, *offset + begin, what, path);
    in_flight.push_back(std::async(std::launch::async, [&actual, i, out, length] {
      actual[i] = crc32c({out, length});
    }));
  }
  for (auto& f : in_flight) f.get();
  compare(info, actual, path);
}

}  // namespace dlx::checkpoint::detail
