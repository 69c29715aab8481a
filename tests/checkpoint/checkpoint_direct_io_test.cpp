// SPDX-License-Identifier: Apache-2.0
// The save path's own tensor writes (checkpoint/src/tensor_writer.hpp): O_DIRECT for the
// page-aligned middle of a tensor, straight from page-aligned memory or through a bounce buffer,
// the page cache for unaligned heads and tails. Tensors of every alignment and of sizes off the
// page and across CRC blocks must read back byte for byte through dlx's loader and through HDF5's
// own H5Dread (which knows nothing of dlx's offsets), with the stored CRCs verified.
#include <hdf5.h>

#include <cstring>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "dlx/checkpoint/checkpoint.hpp"
#include "dlx/checkpoint/tensor.hpp"
#include "test_support.hpp"

using namespace dlx::checkpoint;
using dlx::checkpoint::testing::ScratchDir;

namespace {

std::vector<std::byte> read_with_hdf5(const std::filesystem::path& file, const std::string& name,
                                      std::size_t bytes) {
  std::vector<std::byte> out(bytes);
  hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  REQUIRE(f >= 0);
  hid_t d = H5Dopen2(f, ("/tensors/" + name).c_str(), H5P_DEFAULT);
  REQUIRE(d >= 0);
  CHECK(H5Dread(d, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()) >= 0);
  H5Dclose(d);
  H5Fclose(f);
  return out;
}

}  // namespace

TEST_CASE("checkpoint tensors of any alignment and size read back byte for byte, by dlx and HDF5",
          "[unit][checkpoint][save]") {
  ScratchDir dir;
  // One page-aligned arena; views start on the page, one byte past it, and mid-page.
  auto arena = HostBuffer::allocate(std::size_t{48} << 20);
  for (std::size_t i = 0; i < arena.size(); ++i)
    arena.data()[i] = static_cast<std::byte>((i * 2654435761u) >> 13);
  struct Case {
    std::size_t start, bytes;
  };
  const std::vector<Case> cases = {
      {0, (std::size_t{17} << 20) + 3},  // aligned memory, two CRC blocks, a 3-byte tail
      {1, 5 * 4096 + 17},                 // unaligned memory: through the bounce buffer
      {2048, (std::size_t{9} << 20)},     // mid-page memory, a whole number of pages
      {4096 * 3, 4096},                   // exactly one page
      {7, 100},                           // below a page: all through the page cache
      {0, 0}};                            // empty
  CheckpointContent content;
  content.metadata.experiment = "direct";
  content.metadata.step = 1;
  for (std::size_t i = 0; i < cases.size(); ++i)
    content.tensors.push_back({fmt::format("t{}", i), DType::uint8, {cases[i].bytes},
                               arena.data() + cases[i].start});
  auto path = checkpoint_path(dir.path(), 1);
  save_checkpoint(content, path);

  auto loaded = load_checkpoint(path);  // verifies every CRC
  REQUIRE(loaded.tensors.size() == cases.size());
  for (std::size_t i = 0; i < cases.size(); ++i) {
    INFO("tensor t" << i << ": " << cases[i].bytes << " bytes from arena offset " << cases[i].start);
    const auto& t = loaded.tensor(fmt::format("t{}", i));
    REQUIRE(t.bytes.size() == cases[i].bytes);
    CHECK(std::memcmp(t.bytes.data(), arena.data() + cases[i].start, cases[i].bytes) == 0);
    if (cases[i].bytes == 0) continue;
    auto through_hdf5 = read_with_hdf5(path, fmt::format("t{}", i), cases[i].bytes);
    CHECK(std::memcmp(through_hdf5.data(), arena.data() + cases[i].start, cases[i].bytes) == 0);
  }
}
