// SPDX-License-Identifier: Apache-2.0
// libFuzzer target over the checkpoint readers (summary, verify, load, discovery) on valid HDF5
// files of hostile structure (h5_fuzz_mutate.hpp says why structure-aware). Each input is:
//   content   a checkpoint written by dlx's own save_checkpoint: up to 6 tensors (name, dtype,
//             shape of rank 0-3 with extents 0-8) and up to 3 state values
//   edits     a program of edits (h5_fuzz_mutate.hpp)
//   finish    flags: 1 rewrite metadata_crc32c for the edited tensors (so the readers go on to the
//             tensor bytes), 2 flip a byte inside a tensor's data, 4 cut the file's tail
// Every reader must return or throw dlx::Error: never crash, hang, leak, read or allocate by what
// the file declares (-malloc_limit_mb in scripts/fuzz.sh), or throw anything else (a user would
// see raw exception text).
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "checkpoint_layout.hpp"
#include "dlx/checkpoint/checkpoint.hpp"
#include "dlx/checkpoint/discovery.hpp"
#include "dlx/h5/attributes.hpp"
#include "dlx/h5/handle.hpp"
#include "h5_fuzz_input.hpp"
#include "h5_fuzz_mutate.hpp"
#include "metadata_digest.hpp"

namespace {

using namespace dlx::checkpoint;
using dlx::fuzz::ByteReader;
namespace h5 = dlx::h5;
namespace fs = std::filesystem;

constexpr const char* kTensorNames[] = {"w", "model/w", "model/fc1/b", "a/b/c/d", "rng/rank-0/x",
                                        "optimizer/m"};

CheckpointContent read_content(ByteReader& in, std::vector<std::vector<std::byte>>& storage) {
  CheckpointContent content;
  content.metadata = {.experiment = "fuzz", .trial_id = 3, .step = 5};
  const auto count = in.pick(7);
  for (std::size_t i = 0; i < count; ++i) {
    TensorView view;
    view.name = kTensorNames[in.pick(std::size(kTensorNames))];
    bool taken = false;
    for (const auto& t : content.tensors) taken = taken || t.name == view.name ||
                                                  t.name.starts_with(view.name + "/") ||
                                                  view.name.starts_with(t.name + "/");
    view.dtype = kAllDTypes[in.pick(std::size(kAllDTypes))];
    const auto rank = in.pick(4);
    for (std::size_t d = 0; d < rank; ++d) view.shape.push_back(in.pick(9));
    if (taken) continue;
    auto& bytes = storage.emplace_back(view.byte_size());
    const auto seed = in.u8();
    for (std::size_t b = 0; b < bytes.size(); ++b) bytes[b] = static_cast<std::byte>((b * 31 + seed) & 0x3f);
    view.data = bytes.empty() ? nullptr : bytes.data();
    content.tensors.push_back(std::move(view));
  }
  const auto states = in.pick(4);
  for (std::size_t i = 0; i < states; ++i) {
    const std::string name = i == 0 ? "data_cursor" : i == 1 ? "note" : "lr";
    switch (in.pick(3)) {
      case 0: content.state[name] = static_cast<std::int64_t>(in.u64()); break;
      case 1: content.state[name] = static_cast<double>(in.u32()); break;
      default: content.state[name] = in.bytes(in.pick(32)); break;
    }
  }
  return content;
}

dlx::fuzz::Tree tree_of(const CheckpointContent& content) {
  dlx::fuzz::Tree tree;
  tree.groups = {"/", "/hparams", "/state", "/tensors"};
  for (const auto& t : content.tensors) {
    auto path = "/tensors/" + t.name;
    tree.datasets.push_back(path);
    for (auto slash = path.rfind('/'); slash > 8; slash = path.rfind('/', slash - 1))
      tree.groups.push_back(path.substr(0, slash));
  }
  return tree;
}

// metadata_crc32c as the readers will compute it if they see the tensors the edits made.
void rewrite_digest(hid_t file, const CheckpointSummary& base,
                    const std::map<std::string, dlx::fuzz::ModelTensor>& tensors) {
  CheckpointSummary summary{base.metadata, base.state, {}};
  for (const auto& [path, t] : tensors) {
    auto dtype = dtype_from_name(t.dtype);
    if (!dtype) return;
    summary.tensors.push_back({path.substr(9), *dtype, t.shape, 0, t.crc32c});
  }
  h5::Handle root(H5Gopen2(file, "/", H5P_DEFAULT), H5Gclose);
  H5Adelete(root.get(), checkpoint_layout::kMetadataCrc);
  try {
    h5::write_attribute(root.get(), checkpoint_layout::kMetadataCrc,
                        detail::metadata_digest(summary), "fuzz");
  } catch (const dlx::Error&) {
  }
}

// A byte inside the data of one of the tensors (the readers check it against its CRC), or the
// file's last bytes cut off: changes HDF5 never parses, or detects at open.
void damage(const fs::path& path, ByteReader& in, const std::vector<std::pair<std::uint64_t, std::uint64_t>>& ranges, std::uint8_t flags) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return;
  if ((flags & 2) && !ranges.empty()) {
    auto [offset, bytes] = ranges[in.pick(ranges.size())];
    if (bytes > 0) {
      const auto at = static_cast<off_t>(offset + in.u16() % bytes);
      unsigned char byte = 0;
      if (::pread(fd, &byte, 1, at) == 1) {
        byte = static_cast<unsigned char>(byte ^ (1u << in.pick(8)));
        static_cast<void>(::pwrite(fd, &byte, 1, at));
      }
    }
  }
  if (flags & 4) {
    const auto end = ::lseek(fd, 0, SEEK_END);
    const auto cut = static_cast<off_t>(1 + in.u16() % 4096);
    if (end > cut) static_cast<void>(::ftruncate(fd, end - cut));
  }
  ::close(fd);
}

// DLX_FUZZ_SHOW=1 prints what each reader said (to see what a seed or a finding does).
template <class Read>
void expect_dlx_error_or_success(const char* reader, Read read) {
  static const bool show = std::getenv("DLX_FUZZ_SHOW") != nullptr;
  try {
    read();
    if (show) std::fprintf(stderr, "%s: ok\n", reader);
  } catch (const dlx::Error& e) {
    // the expected outcome for a file that is not an intact checkpoint
    if (show) std::fprintf(stderr, "%s: %s\n", reader, e.what());
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  dlx::fuzz::quiet_hdf5();
  dlx::fuzz::Scratch::get();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  ByteReader in(data, size);
  const auto& scratch = dlx::fuzz::Scratch::get();
  const auto dir = scratch.dir / "checkpoints";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const auto path = checkpoint_path(dir, 5);

  std::vector<std::vector<std::byte>> storage;
  const auto content = read_content(in, storage);
  try {
    save_checkpoint(content, path);
  } catch (const dlx::Error&) {
    return 0;  // content save_checkpoint refuses (a NUL byte in a string)
  }
  const auto base = read_checkpoint_summary(path);  // dlx's own file: must read back
  std::map<std::string, dlx::fuzz::ModelTensor> tensors;
  for (const auto& t : base.tensors)
    tensors["/tensors/" + t.name] = {std::string(dtype_name(t.dtype)), t.shape, t.crc32c};

  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
  std::uint8_t flags = 0;
  {
    h5::Handle file(H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), H5Fclose);
    if (!file) std::abort();
    auto tree = tree_of(content);
    dlx::fuzz::mutate(file.get(), path, in, tree, tensors);
    flags = in.u8();
    if (flags & 1) rewrite_digest(file.get(), base, tensors);
    for (const auto& [tensor_path, t] : tensors) {
      h5::Handle dataset(H5Dopen2(file.get(), tensor_path.c_str(), H5P_DEFAULT), H5Dclose);
      auto offset = dataset ? H5Dget_offset(dataset.get()) : HADDR_UNDEF;
      auto bytes = dataset ? H5Dget_storage_size(dataset.get()) : 0;
      if (offset != HADDR_UNDEF && bytes > 0) ranges.emplace_back(offset, bytes);
    }
    H5Eclear2(H5E_DEFAULT);
  }
  damage(path, in, ranges, flags);

  expect_dlx_error_or_success("summary", [&] { read_checkpoint_summary(path); });
  expect_dlx_error_or_success("verify", [&] { verify_checkpoint(path); });
  expect_dlx_error_or_success("load", [&] {
    auto loaded = load_checkpoint(path, {.experiment = "fuzz", .trial_id = 3});
    std::uint64_t bytes = 0;
    for (const auto& t : loaded.tensors) bytes += t.bytes.size();
    if (bytes > fs::file_size(path)) std::abort();  // more than the file holds: read twice
  });
  expect_dlx_error_or_success("load deferred", [&] {
    // The model's tensors verified at the load, then read into memory of the caller's.
    auto loaded = load_checkpoint(path, {.experiment = "fuzz", .trial_id = 3}, Deferral{{"model/", "w"}});
    for (const auto& info : loaded.deferred) {
      if (info.bytes > fs::file_size(path)) std::abort();  // the load admitted more than the file holds
      std::vector<std::byte> into(info.bytes);
      loaded.read_into(info.name, into);
    }
  });
  expect_dlx_error_or_success("find_latest_valid", [&] {
    auto found = find_latest_valid(dir);
    if (!found.path && !found.skipped.empty()) throw CheckpointError(found.skipped.front().reason);
  });
  expect_dlx_error_or_success("load_latest_valid", [&] { load_latest_valid(dir); });
  return 0;
}
