// SPDX-License-Identifier: Apache-2.0
// Every class of damage is detected before any byte is used: truncation at many offsets, a bit
// flipped in tensor data, bits flipped anywhere in the metadata, a newer format version, a file
// of another trial, a file that is not a checkpoint.
#include <hdf5.h>

#include <catch2/catch.hpp>

#include "checkpoint_samples.hpp"
#include "dlx/checkpoint/checkpoint.hpp"
#include "dlx/record/trial_record.hpp"
#include "test_support.hpp"

using namespace dlx::checkpoint;
using namespace dlx::record;
using Catch::Matchers::Contains;
using dlx::checkpoint::testing::ScratchDir;
using dlx::checkpoint::testing::read_bytes;
using dlx::checkpoint::testing::write_bytes;

namespace {

// [begin, end) of every tensor's bytes in the file.
std::vector<std::pair<std::size_t, std::size_t>> data_ranges(const std::filesystem::path& path,
                                                             const CheckpointSummary& summary) {
  std::vector<std::pair<std::size_t, std::size_t>> ranges;
  hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  for (const auto& t : summary.tensors) {
    auto name = "/tensors/" + t.name;
    hid_t dataset = H5Dopen2(file, name.c_str(), H5P_DEFAULT);
    auto offset = H5Dget_offset(dataset);
    if (t.bytes > 0) ranges.emplace_back(offset, offset + t.bytes);
    H5Dclose(dataset);
  }
  H5Fclose(file);
  return ranges;
}

bool in_ranges(std::size_t offset, const std::vector<std::pair<std::size_t, std::size_t>>& ranges) {
  for (auto [begin, end] : ranges)
    if (offset >= begin && offset < end) return true;
  return false;
}

}  // namespace

TEST_CASE("a checkpoint truncated anywhere is refused", "[unit][checkpoint][corruption]") {
  ScratchDir dir;
  testing::SampleContent sample(100, 3000);
  auto good = checkpoint_path(dir.path(), 100);
  save_checkpoint(sample.content(), good);
  auto bytes = read_bytes(good);
  auto damaged = dir.path() / "step-99.h5";
  std::vector<std::size_t> cuts{0, 1, 7, 8, 100, 511, 512, 2048, 4096, bytes.size() - 1};
  for (std::size_t cut = 1; cut < bytes.size(); cut += bytes.size() / 97) cuts.push_back(cut);
  for (auto cut : cuts) {
    INFO("truncated to " << cut << " of " << bytes.size() << " bytes");
    write_bytes(damaged, bytes.substr(0, cut));
    CHECK_THROWS_AS(load_checkpoint(damaged), CheckpointError);
    CHECK_THROWS_AS(verify_checkpoint(damaged), CheckpointError);
  }
}

TEST_CASE("a bit flipped in tensor data fails the CRC of that tensor",
          "[unit][checkpoint][corruption]") {
  ScratchDir dir;
  testing::SampleContent sample(100, std::size_t{9} << 20 >> 2);  // 9 MiB, within read_bytes' limit
  auto path = checkpoint_path(dir.path(), 100);
  save_checkpoint(sample.content(), path);
  auto ranges = data_ranges(path, read_checkpoint_summary(path));
  auto original = read_bytes(path);
  for (auto [begin, end] : ranges) {
    for (auto offset : {begin, begin + (end - begin) / 2, end - 1}) {
      auto bytes = original;
      bytes[offset] = static_cast<char>(bytes[offset] ^ 0x10);
      write_bytes(path, bytes);
      INFO("byte " << offset);
      CHECK_THROWS_WITH(load_checkpoint(path), Contains("checksum mismatch in tensor"));
      CHECK_THROWS_WITH(verify_checkpoint(path), Contains("checksum mismatch in tensor"));
    }
  }
  CHECK_NOTHROW(read_checkpoint_summary(path));  // metadata alone is intact
}

TEST_CASE("a bit flipped in metadata is detected or harmless, never wrong data",
          "[unit][checkpoint][corruption]") {
  ScratchDir dir;
  testing::SampleContent sample(100, 64);
  auto path = checkpoint_path(dir.path(), 100);
  save_checkpoint(sample.content(), path);
  auto ranges = data_ranges(path, read_checkpoint_summary(path));
  auto original = read_bytes(path);
  std::size_t flips = 0, detected = 0;
  for (std::size_t offset = 0; offset < original.size(); offset += 13) {
    if (in_ranges(offset, ranges)) continue;
    auto bytes = original;
    bytes[offset] = static_cast<char>(bytes[offset] ^ (1 << (offset % 8)));
    write_bytes(path, bytes);
    ++flips;
    try {
      auto loaded = load_checkpoint(path);
      INFO("bit flipped at byte " << offset << " loaded different content");
      CHECK(testing::same_as(sample.content(), loaded));
    } catch (const CheckpointError&) {
      ++detected;
    }
  }
  // Most of the file is checksummed metadata; unused padding may be flipped harmlessly.
  CHECK(detected > flips / 4);
}

TEST_CASE("a bit flipped inside a string attribute is detected",
          "[unit][checkpoint][corruption]") {
  // Strings are fixed-length, inside checksummed attribute storage (not the global heap).
  ScratchDir dir;
  testing::SampleContent sample;
  auto path = checkpoint_path(dir.path(), 100);
  save_checkpoint(sample.content(), path);
  auto bytes = read_bytes(path);
  auto at = bytes.find("\"arch\":\"r");
  REQUIRE(at != std::string::npos);
  bytes[at + 9] = static_cast<char>(bytes[at + 9] ^ 0x01);
  write_bytes(path, bytes);
  CHECK_THROWS_WITH(load_checkpoint(path), Contains("checksum"));
}

TEST_CASE("a newer format version is refused with a message", "[unit][checkpoint][corruption]") {
  ScratchDir dir;
  testing::SampleContent sample;
  auto path = checkpoint_path(dir.path(), 100);
  save_checkpoint(sample.content(), path);
  hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  hid_t attribute = H5Aopen(file, "format_version", H5P_DEFAULT);
  int version = 2;
  H5Awrite(attribute, H5T_NATIVE_INT, &version);
  H5Aclose(attribute);
  H5Fclose(file);
  CHECK_THROWS_WITH(load_checkpoint(path), Contains("format_version 2 is newer"));
}

TEST_CASE("files of another trial, or not checkpoints, are refused", "[unit][checkpoint]") {
  ScratchDir dir;
  testing::SampleContent sample;
  auto path = checkpoint_path(dir.path(), 100);
  save_checkpoint(sample.content(), path);
  CHECK_THROWS_WITH(load_checkpoint(path, {.experiment = "mnist-asha", .trial_id = 8}),
                    Contains("belongs to trial 7 of experiment 'mnist-asha', not to trial 8"));
  CHECK_THROWS_WITH(load_checkpoint(path, {.experiment = "other", .trial_id = 7}),
                    Contains("belongs to trial 7"));
  CHECK_NOTHROW(load_checkpoint(path, {.experiment = "mnist-asha", .trial_id = 7}));

  auto record = dir.path() / "trial.h5";
  save_trial_record(testing::sample_record(), record);
  CHECK_THROWS_WITH(load_checkpoint(record), Contains("not a dlx checkpoint"));
  write_bytes(dir.path() / "text.h5", "hello");
  CHECK_THROWS_WITH(load_checkpoint(dir.path() / "text.h5"), Contains("not an HDF5 file"));
  CHECK_THROWS_WITH(load_checkpoint(dir.path() / "missing.h5"),
                    Contains("No such file or directory"));
}

TEST_CASE("a load large enough for several read threads gives every byte, and names the first "
          "damaged block whichever thread read it", "[unit][checkpoint][corruption]") {
  ScratchDir dir;
  // model/big: 80 MiB, five CRC blocks; with the rest over the 64 MiB below which one thread reads.
  testing::SampleContent sample(100, std::size_t{80} << 20 >> 2);
  const auto path = checkpoint_path(dir.path(), 100);
  save_checkpoint(sample.content(), path);
  CHECK(testing::same_as(sample.content(), load_checkpoint(path)));
  CHECK_NOTHROW(verify_checkpoint(path));

  // Blocks 4 and 1 damaged (the later one first in the file's order of damage): the error is
  // block 1's, every time, though another thread may have read block 4 first.
  const auto big = testing::tensor_offset(path, "model/big");
  testing::flip_byte_in_place(path, big + 4 * kCrcBlockBytes + 9);
  testing::flip_byte_in_place(path, big + 1 * kCrcBlockBytes + 9);
  for (int attempt = 0; attempt < 3; ++attempt) {
    INFO("attempt " << attempt);
    CHECK_THROWS_WITH(load_checkpoint(path),
                      Contains("checksum mismatch in tensor 'model/big' (block 1 of 5"));
    CHECK_THROWS_WITH(verify_checkpoint(path),
                      Contains("checksum mismatch in tensor 'model/big' (block 1 of 5"));
  }
}
