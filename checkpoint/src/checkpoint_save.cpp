// SPDX-License-Identifier: Apache-2.0
// save_checkpoint: write a temporary file beside the final one (HDF5 writes the metadata and
// allocates the datasets; dlx writes the tensor bytes at their offsets, checksumming each piece
// on the way: tensor_writer.hpp), add the checksums, close (HDF5 flushes), then publish it
// (fsync, rename, fsync the directory). Any failure removes the temporary file and leaves every
// earlier checkpoint untouched.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "checkpoint_layout.hpp"
#include "crc32c.hpp"
#include "dlx/checkpoint/checkpoint.hpp"
#include "dlx/common/clock.hpp"
#include "dlx/common/durable_file.hpp"
#include "dlx/h5/attributes.hpp"
#include "dlx/h5/datasets.hpp"
#include "dlx/h5/error.hpp"
#include "dlx/h5/objects.hpp"
#include "h5_types.hpp"
#include "dlx/h5/hparams.hpp"
#include "metadata_digest.hpp"
#include "snapshot.hpp"
#include "tensor_writer.hpp"

namespace dlx::checkpoint {
namespace {

namespace names = checkpoint_layout;

// Checkpoint strings are fixed-length: see write_fixed_string_attribute.
void write_string(hid_t object, const char* name, const std::string& value,
                  const std::filesystem::path& file) {
  h5::write_fixed_string_attribute(object, name, value, file);
}

// HDF5 names and the fixed-length strings of a checkpoint end at the first NUL: a string holding
// one would be read back shorter than it was saved, and the checkpoint would fail its own
// metadata checksum forever. Refused before the file is created.
void require_no_nul(std::string_view text, const std::string& what) {
  if (text.find('\0') != std::string_view::npos)
    throw CheckpointError(fmt::format("{} contains a NUL byte, which a checkpoint string cannot "
                                      "hold (store raw bytes as a uint8 tensor)",
                                      what));
}

void validate_strings(const CheckpointContent& content) {
  require_no_nul(content.metadata.experiment, "the experiment name");
  require_no_nul(content.metadata.metric_name, "the metric name");
  for (const auto& [name, value] : content.state) {
    const auto shown = detail::name_for_message(name);
    require_no_nul(name, fmt::format("the name of state value '{}'", shown));
    if (const auto* text = std::get_if<std::string>(&value))
      require_no_nul(*text, fmt::format("state value '{}'", shown));
  }
}

void write_root_attributes(hid_t root, const CheckpointMetadata& m, const std::string& hparams_json,
                           const std::filesystem::path& file) {
  write_string(root, names::kKind, std::string(names::kKindValue), file);
  h5::write_attribute(root, names::kFormatVersion, std::int32_t{m.format_version}, file);
  write_string(root, names::kLibraryVersion, m.library_version, file);
  write_string(root, names::kExperiment, m.experiment, file);
  h5::write_attribute(root, names::kTrialId, m.trial_id, file);
  h5::write_attribute(root, names::kStep, m.step, file);
  h5::write_attribute(root, names::kEpoch, m.epoch, file);
  h5::write_attribute(root, names::kWorldSize, std::int32_t{m.world_size}, file);
  h5::write_attribute(root, names::kCreatedUnix, m.created_unix, file);
  write_string(root, names::kHparamsJson, hparams_json, file);
  write_string(root, names::kMetricName, m.metric_name, file);
  h5::write_attribute(root, names::kMetricValue,
                      m.metric_value.value_or(std::numeric_limits<double>::quiet_NaN()), file);
}

void write_state(hid_t root, const StateMap& state, const std::filesystem::path& file) {
  auto group = h5::create_group(root, names::kStateGroup, file);
  for (const auto& [name, value] : state) {
    if (name.empty()) throw CheckpointError("a state value has an empty name");
    if (const auto* text = std::get_if<std::string>(&value))
      h5::write_fixed_string_attribute(group.get(), name, *text, file);
    else
      // A copy of the name: clang before 16 cannot capture a structured binding (the fuzz build).
      std::visit([&, key = name](const auto& v) { h5::write_attribute(group.get(), key, v, file); },
                 value);
  }
}

// The tensors: HDF5 creates every dataset with its space allocated, dlx writes the bytes at their
// file offsets and checksums them on the way (tensor_writer.hpp), then HDF5 adds the attributes.
void write_tensors(hid_t root, const std::vector<const TensorView*>& tensors,
                   CheckpointSummary& summary, const std::filesystem::path& file) {
  auto group = h5::create_group(root, names::kTensorsGroup, file);
  std::vector<h5::Handle> datasets;
  for (const auto* t : tensors) {
    auto type = file_type_of(t->dtype, file);
    datasets.push_back(h5::create_array(group.get(), t->name, type.get(), t->shape, file));
  }
  std::vector<std::vector<std::uint32_t>> crcs;
  detail::TensorFileWriter writer(file);
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const auto* t = tensors[i];
    std::span<const std::byte> bytes{static_cast<const std::byte*>(t->data), t->byte_size()};
    if (bytes.empty()) {
      crcs.push_back({dlx::crc32c(std::span<const std::byte>{})});
    } else if (auto offset = h5::contiguous_offset(datasets[i].get())) {
      crcs.push_back(writer.write(bytes, *offset, t->name));
    } else {  // not expected (allocated at creation), but H5Dwrite is always correct
      auto type = file_type_of(t->dtype, file);
      h5::check(H5Dwrite(datasets[i].get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, t->data),
                file, "write tensor " + t->name);
      crcs.push_back(detail::block_crc32c(bytes, detail::checksum_threads()));
    }
  }
  writer.close();
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const auto* t = tensors[i];
    write_string(datasets[i].get(), names::kDType, std::string(dtype_name(t->dtype)), file);
    h5::write_attribute(datasets[i].get(), names::kCrc, crcs[i], file);
    h5::write_attribute(datasets[i].get(), names::kCrcBlockBytes, kCrcBlockBytes, file);
    summary.tensors.push_back({t->name, t->dtype, t->shape, t->byte_size(), std::move(crcs[i])});
  }
}

void write_file(const CheckpointContent& content, const std::vector<const TensorView*>& tensors,
                const std::filesystem::path& file) {
  CheckpointSummary summary{content.metadata, content.state, {}};
  auto handle = h5::create_file(file, {.checksummed_metadata = true, .alignment = 4096});
  try {
    {
      auto root = h5::open_root_group(handle.get(), file);
      write_root_attributes(root.get(), summary.metadata,
                            h5::hparams_as_json(summary.metadata.hparams), file);
      h5::write_hparams_group(root.get(), names::kHparamsGroup, summary.metadata.hparams, file,
                              h5::Strings::fixed_length);
      write_state(root.get(), content.state, file);
      write_tensors(root.get(), tensors, summary, file);
      h5::write_attribute(root.get(), names::kMetadataCrc, detail::metadata_digest(summary), file);
    }
    h5::check(H5Fflush(handle.get(), H5F_SCOPE_LOCAL), file, "flush the HDF5 file");
  } catch (...) {
    // HDF5 flushes again when the file is closed; after ENOSPC or EIO that flush fails too and
    // the file stays open inside HDF5 (and crashes its exit handler). Emptying the doomed
    // temporary file gives the few metadata bytes room, so the close succeeds.
    if (::truncate(file.c_str(), 0) != 0) { /* the close below reports what it can */ }
    handle.reset();
    throw;
  }
  handle.close(file, "HDF5 file");
}

CheckpointContent completed(const CheckpointContent& content) {
  CheckpointContent out{content.metadata, content.state, {}};
  out.metadata.format_version = kCheckpointFormatVersion;
  out.metadata.library_version = DLX_VERSION;
  if (out.metadata.created_unix == 0) out.metadata.created_unix = unix_seconds_now();
  if (out.metadata.metric_value && !std::isfinite(*out.metadata.metric_value))
    out.metadata.metric_value.reset();
  return out;
}

void save_host_tensors(const CheckpointContent& content, std::span<const TensorView> host_tensors,
                       const std::filesystem::path& path) {
  detail::validate_tensors(host_tensors);
  validate_strings(content);
  std::vector<const TensorView*> sorted;
  for (const auto& t : host_tensors) sorted.push_back(&t);
  std::sort(sorted.begin(), sorted.end(),
            [](const TensorView* a, const TensorView* b) { return a->name < b->name; });
  auto full = completed(content);
  h5::QuietErrors quiet;
  auto temporary = temporary_path_for(path);
  try {
    write_file(full, sorted, temporary);
    publish_file(temporary, path);
  } catch (const SystemError& e) {
    ::unlink(temporary.c_str());
    throw CheckpointError(fmt::format("cannot save checkpoint {}: {}", path.string(), e.what()),
                          e.error_number());
  } catch (const CheckpointError& e) {
    ::unlink(temporary.c_str());
    throw CheckpointError(fmt::format("cannot save checkpoint {}: {}", path.string(), e.what()),
                          e.error_number());
  } catch (const h5::H5Error& e) {
    ::unlink(temporary.c_str());
    throw CheckpointError(fmt::format("cannot save checkpoint {}: {}", path.string(), e.what()),
                          e.error_number());
  } catch (...) {
    ::unlink(temporary.c_str());
    throw;
  }
}

}  // namespace

std::filesystem::path checkpoint_path(const std::filesystem::path& directory, std::int64_t step) {
  return directory / fmt::format("step-{}.h5", step);
}

void save_checkpoint(const CheckpointContent& content, const std::filesystem::path& path) {
  bool any_device = std::any_of(content.tensors.begin(), content.tensors.end(), [](const auto& t) {
    return t.location == MemoryLocation::cuda_device;
  });
  if (!any_device) return save_host_tensors(content, content.tensors, path);
  detail::DeviceDownload download;
  const auto after = detail::mark_if_on_device(content.tensors, content.cuda_stream);
  auto snapshot = detail::snapshot_tensors(content.tensors, {}, download, after);
  detail::copy_the_rest(snapshot, download, after);
  std::vector<TensorView> views;
  for (const auto& t : snapshot.tensors) views.push_back(t.view());
  save_host_tensors(content, views, path);
}

namespace detail {
// For the async saver: write tensors that are already host snapshots.
void save_snapshot(const CheckpointContent& content, const std::vector<Tensor>& tensors,
                   const std::filesystem::path& path) {
  std::vector<TensorView> views;
  for (const auto& t : tensors) views.push_back(t.view());
  save_host_tensors(content, views, path);
}
}  // namespace detail

}  // namespace dlx::checkpoint
