// SPDX-License-Identifier: Apache-2.0
#include "checkpoint_reader.hpp"

#include <fcntl.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "checkpoint_layout.hpp"
#include "crc32c.hpp"
#include "dlx/h5/attributes.hpp"
#include "dlx/h5/datasets.hpp"
#include "dlx/h5/error.hpp"
#include "dlx/h5/limits.hpp"
#include "dlx/h5/objects.hpp"
#include "dlx/h5/read_guard.hpp"
#include "h5_boundary.hpp"
#include "h5_types.hpp"
#include "dlx/h5/hparams.hpp"
#include "metadata_digest.hpp"

namespace dlx::checkpoint::detail {
namespace {

namespace names = checkpoint_layout;
namespace fs = std::filesystem;

void check_identity(hid_t root, const fs::path& path) {
  if (!h5::has_attribute(root, names::kKind, path) ||
      h5::read_string_attribute(root, names::kKind, path) != names::kKindValue)
    h5::throw_format_error(path, "not a dlx checkpoint (attribute 'kind' of / is not "
                                 "'dlx checkpoint')");
  auto version = h5::read_int64_attribute(root, names::kFormatVersion, path);
  if (version > kCheckpointFormatVersion)
    h5::throw_format_error(path, fmt::format("checkpoint format_version {} is newer than the "
                                             "newest this dlx reads ({}); upgrade dlx",
                                             version, kCheckpointFormatVersion));
  if (version < 1)
    h5::throw_format_error(path, fmt::format("invalid checkpoint format_version {}", version));
}

CheckpointMetadata read_metadata(hid_t root, const fs::path& path) {
  CheckpointMetadata m;
  m.format_version = h5::read_int_attribute(root, names::kFormatVersion, path);
  m.library_version = h5::read_string_attribute(root, names::kLibraryVersion, path);
  m.experiment = h5::read_string_attribute(root, names::kExperiment, path);
  m.trial_id = h5::read_int64_attribute(root, names::kTrialId, path);
  m.step = h5::read_int64_attribute(root, names::kStep, path);
  m.epoch = h5::read_int64_attribute(root, names::kEpoch, path);
  m.world_size = h5::read_int_attribute(root, names::kWorldSize, path);
  m.created_unix = h5::read_int64_attribute(root, names::kCreatedUnix, path);
  m.hparams = h5::parse_hparams_json(h5::read_string_attribute(root, names::kHparamsJson, path), path);
  m.metric_name = h5::read_string_attribute(root, names::kMetricName, path);
  auto value = h5::read_double_attribute(root, names::kMetricValue, path);
  if (std::isfinite(value)) m.metric_value = value;
  return m;
}

void check_expectation(const CheckpointMetadata& m, const Expectation& expect, const fs::path& path) {
  bool experiment_differs = expect.experiment && *expect.experiment != m.experiment;
  bool trial_differs = expect.trial_id && *expect.trial_id != m.trial_id;
  if (experiment_differs || trial_differs)
    h5::throw_format_error(
        path, fmt::format("belongs to trial {} of experiment '{}', not to trial {} of '{}'",
                          m.trial_id, m.experiment,
                          expect.trial_id ? std::to_string(*expect.trial_id) : "*",
                          expect.experiment.value_or("*")));
}

StateMap read_state(hid_t root, h5::ReadGuard& guard) {
  const auto& path = guard.file();
  StateMap state;
  const auto group_path = h5::child_path("/", names::kStateGroup);
  auto group = h5::open_group_member(root, "/", names::kStateGroup, guard);
  auto id = group.get();
  for (const auto& name : h5::attribute_names(id, path)) {
    guard.count(fmt::format("attribute '{}' of {}", name, group_path));
    switch (h5::attribute_class(id, name, path)) {
      case H5T_INTEGER: state[name] = h5::read_int64_attribute(id, name, path); break;
      case H5T_FLOAT: state[name] = h5::read_double_attribute(id, name, path); break;
      case H5T_STRING: {
        auto text = h5::read_string_attribute(id, name, path);
        guard.take(text.size(), fmt::format("state value '{}'", name));
        state[name] = std::move(text);
        break;
      }
      default:
        h5::throw_format_error(path, fmt::format("state value '{}' is not a number or string", name));
    }
  }
  return state;
}

TensorInfo read_tensor_info(hid_t dataset, const std::string& name, h5::ReadGuard& guard,
                            std::optional<std::uint64_t>& offset) {
  const auto& path = guard.file();
  auto what = "tensor '" + name + "'";
  // Layout, extent and place in the file first: a tensor must be stored as dlx stores it before
  // anything is sized by what it declares.
  auto extent = h5::stored_extent(dataset, what, path);
  auto dtype_text = h5::read_string_attribute(dataset, names::kDType, path);
  auto dtype = dtype_from_name(dtype_text);
  if (!dtype) h5::throw_format_error(path, fmt::format("{} has unknown dtype '{}'", what, dtype_text));
  h5::Handle type(h5::check_id(H5Dget_type(dataset), path, "read the type of " + what), H5Tclose);
  if (!type_matches(type.get(), *dtype))
    h5::throw_format_error(path, fmt::format("{} is stored with an HDF5 type that is not {}", what,
                                             dtype_text));
  // The type matched, so only an empty (H5S_NULL) dataspace can hold other than its shape's bytes.
  if (TensorView{name, *dtype, extent.shape, nullptr}.byte_size() != extent.bytes)
    h5::throw_format_error(path, fmt::format("{} has an empty (null) dataspace; dlx stores a "
                                             "scalar as a one-element one",
                                             what));
  guard.take(extent.bytes, what);
  TensorInfo info{name, *dtype, std::move(extent.shape), extent.bytes, {}};
  if (h5::read_int64_attribute(dataset, names::kCrcBlockBytes, path) !=
      static_cast<std::int64_t>(kCrcBlockBytes))
    h5::throw_format_error(path, fmt::format("{} has an unsupported checksum block size", what));
  // The count the bytes call for, checked before the checksums are read.
  auto checksums = h5::attribute_elements(dataset, names::kCrc, path);
  if (checksums != crc_block_count(info.bytes))
    h5::throw_format_error(path, fmt::format("{} has {} checksums for {} bytes", what, checksums,
                                             info.bytes));
  info.crc32c = h5::read_uint32_array_attribute(dataset, names::kCrc, path);
  offset = extent.offset;
  return info;
}

// Depth-first, in name order per group, through hard links only, each object once (the guard
// refuses a cycle), at most kMaxGroupDepth groups deep: the recursion is bounded, whatever the
// file declares.
void walk_tensors(hid_t group, const std::string& group_path, const std::string& prefix, int depth,
                  OpenCheckpoint& out, h5::ReadGuard& guard) {
  for (const auto& link : h5::member_names(group, group_path, guard)) {
    auto member = h5::open_member(group, group_path, link, guard);
    auto name = prefix.empty() ? link : prefix + "/" + link;
    if (member.type == H5O_TYPE_GROUP) {
      if (depth >= h5::kMaxGroupDepth)
        guard.refuse(fmt::format("{} is nested more than {} groups deep below /{} (dlx's limit)",
                                 member.path, h5::kMaxGroupDepth, names::kTensorsGroup));
      walk_tensors(member.object.get(), member.path, name, depth + 1, out, guard);
    } else if (member.type == H5O_TYPE_DATASET) {
      out.offsets.emplace_back();
      out.summary.tensors.push_back(
          read_tensor_info(member.object.get(), name, guard, out.offsets.back()));
    }
  }
}

}  // namespace

OpenCheckpoint open_checkpoint(const fs::path& path, const Expectation& expect) {
  auto opened = h5::open_regular_file(
      path, expect.follow_symlink ? h5::Symlinks::follow : h5::Symlinks::refuse, kCheckpointKind);
  OpenCheckpoint out;
  out.fd = std::move(opened.fd);
  out.file_bytes = opened.bytes;
  out.file = std::move(opened.file);
  ::posix_fadvise(out.fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
  h5::ReadGuard guard(path, out.file_bytes, kCheckpointKind);
  auto root = h5::open_root(out.file.get(), guard);
  check_identity(root.get(), path);
  out.summary.metadata = read_metadata(root.get(), path);
  check_expectation(out.summary.metadata, expect, path);
  out.summary.state = read_state(root.get(), guard);
  auto tensors = h5::open_group_member(root.get(), "/", names::kTensorsGroup, guard);
  walk_tensors(tensors.get(), h5::child_path("/", names::kTensorsGroup), "", 0, out, guard);
  // Name order of the whole path (the walk is name order per group): the digest's order.
  std::vector<std::size_t> order(out.summary.tensors.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return out.summary.tensors[a].name < out.summary.tensors[b].name;
  });
  OpenCheckpoint sorted{std::move(out.fd), out.file_bytes, std::move(out.file),
                        {out.summary.metadata, out.summary.state, {}}, {}};
  for (auto i : order) {
    sorted.summary.tensors.push_back(std::move(out.summary.tensors[i]));
    sorted.offsets.push_back(out.offsets[i]);
  }
  auto stored = h5::read_int64_attribute(root.get(), names::kMetadataCrc, path);
  if (stored != static_cast<std::int64_t>(metadata_digest(sorted.summary)))
    h5::throw_format_error(path, "metadata checksum mismatch (metadata_crc32c): the file is "
                                 "damaged");
  return sorted;
}

}  // namespace dlx::checkpoint::detail
