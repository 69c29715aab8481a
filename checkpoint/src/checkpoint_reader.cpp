#include "checkpoint_reader.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "checkpoint_layout.hpp"
#include "crc32c.hpp"
#include "dlx/checkpoint/h5/attributes.hpp"
#include "dlx/checkpoint/h5/datasets.hpp"
#include "dlx/checkpoint/h5/error.hpp"
#include "dlx/checkpoint/h5/objects.hpp"
#include "dlx/checkpoint/h5/types.hpp"
#include "hparams_io.hpp"
#include "metadata_digest.hpp"

namespace dlx::checkpoint::detail {
namespace {

namespace names = checkpoint_layout;
namespace fs = std::filesystem;

void require_hdf5_file(const fs::path& path) {
  struct stat status {};
  if (::stat(path.c_str(), &status) != 0) {
    int error = errno;
    throw CheckpointError(fmt::format("{}: cannot read checkpoint: {}", path.string(),
                                      std::strerror(error)),
                          error);
  }
  if (S_ISDIR(status.st_mode)) h5::throw_format_error(path, "is a directory, not a checkpoint");
  if (h5::check_tri(H5Fis_hdf5(path.c_str()), path, "check the HDF5 signature") == 0)
    h5::throw_format_error(path, "not an HDF5 file (no HDF5 signature), so not a dlx checkpoint");
}

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
  m.hparams = parse_hparams_json(h5::read_string_attribute(root, names::kHparamsJson, path), path);
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

StateMap read_state(hid_t root, const fs::path& path) {
  StateMap state;
  auto group = h5::open_group(root, names::kStateGroup, path);
  for (const auto& name : h5::attribute_names(group.get(), path)) {
    switch (h5::attribute_class(group.get(), name, path)) {
      case H5T_INTEGER: state[name] = h5::read_int64_attribute(group.get(), name, path); break;
      case H5T_FLOAT: state[name] = h5::read_double_attribute(group.get(), name, path); break;
      case H5T_STRING: state[name] = h5::read_string_attribute(group.get(), name, path); break;
      default:
        h5::throw_format_error(path, fmt::format("state value '{}' is not a number or string", name));
    }
  }
  return state;
}

TensorInfo read_tensor_info(hid_t dataset, const std::string& name, const fs::path& path,
                            std::optional<std::uint64_t>& offset) {
  auto what = "tensor '" + name + "'";
  auto dtype_text = h5::read_string_attribute(dataset, names::kDType, path);
  auto dtype = dtype_from_name(dtype_text);
  if (!dtype) h5::throw_format_error(path, fmt::format("{} has unknown dtype '{}'", what, dtype_text));
  h5::Handle type(h5::check_id(H5Dget_type(dataset), path, "read the type of " + what), H5Tclose);
  if (!h5::type_matches(type.get(), *dtype))
    h5::throw_format_error(path, fmt::format("{} is stored with an HDF5 type that is not {}", what,
                                             dtype_text));
  TensorInfo info{name, *dtype, h5::dataset_shape(dataset, path), 0, {}};
  info.bytes = TensorView{name, *dtype, info.shape, nullptr}.byte_size();
  info.crc32c = h5::read_uint32_array_attribute(dataset, names::kCrc, path);
  if (h5::read_int64_attribute(dataset, names::kCrcBlockBytes, path) !=
      static_cast<std::int64_t>(kCrcBlockBytes))
    h5::throw_format_error(path, fmt::format("{} has an unsupported checksum block size", what));
  if (info.crc32c.size() != crc_block_count(info.bytes))
    h5::throw_format_error(path, fmt::format("{} has {} checksums for {} bytes", what,
                                             info.crc32c.size(), info.bytes));
  offset = h5::contiguous_offset(dataset);
  return info;
}

void walk_tensors(hid_t group, const std::string& prefix, OpenCheckpoint& out, const fs::path& path) {
  for (const auto& link : h5::link_names(group, path)) {
    H5O_info_t info{};
    h5::check(H5Oget_info_by_name2(group, link.c_str(), &info, H5O_INFO_BASIC, H5P_DEFAULT), path,
              "inspect " + h5::describe("object", group, link));
    auto name = prefix.empty() ? link : prefix + "/" + link;
    if (info.type == H5O_TYPE_GROUP) {
      auto child = h5::open_group(group, link, path);
      walk_tensors(child.get(), name, out, path);
    } else if (info.type == H5O_TYPE_DATASET) {
      h5::Handle dataset(h5::check_id(H5Dopen2(group, link.c_str(), H5P_DEFAULT), path,
                                      "open " + h5::describe("dataset", group, link)),
                         H5Dclose);
      out.offsets.emplace_back();
      out.summary.tensors.push_back(read_tensor_info(dataset.get(), name, path, out.offsets.back()));
    }
  }
}

}  // namespace

OpenCheckpoint open_checkpoint(const fs::path& path, const Expectation& expect) {
  require_hdf5_file(path);
  OpenCheckpoint out;
  out.file = h5::open_file_read_only(path);
  auto root = h5::open_root_group(out.file.get(), path);
  check_identity(root.get(), path);
  out.summary.metadata = read_metadata(root.get(), path);
  check_expectation(out.summary.metadata, expect, path);
  out.summary.state = read_state(root.get(), path);
  auto tensors = h5::open_group(root.get(), names::kTensorsGroup, path);
  walk_tensors(tensors.get(), "", out, path);
  // Name order of the whole path (the walk is name order per group): the digest's order.
  std::vector<std::size_t> order(out.summary.tensors.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return out.summary.tensors[a].name < out.summary.tensors[b].name;
  });
  OpenCheckpoint sorted{std::move(out.file), {out.summary.metadata, out.summary.state, {}}, {}};
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
