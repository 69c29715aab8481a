// SPDX-License-Identifier: Apache-2.0
#pragma once
// Names in step-<N>.h5 (docs/checkpoint-format.md), shared by the writer and the readers.
namespace dlx::checkpoint::checkpoint_layout {

inline constexpr const char* kKindValue = "dlx checkpoint";

// Attributes of /.
inline constexpr const char* kKind = "kind";
inline constexpr const char* kFormatVersion = "format_version";
inline constexpr const char* kLibraryVersion = "library_version";
inline constexpr const char* kExperiment = "experiment";
inline constexpr const char* kTrialId = "trial_id";
inline constexpr const char* kStep = "step";
inline constexpr const char* kEpoch = "epoch";
inline constexpr const char* kWorldSize = "world_size";
inline constexpr const char* kCreatedUnix = "created_unix";
inline constexpr const char* kHparamsJson = "hparams_json";
inline constexpr const char* kMetricName = "metric_name";
inline constexpr const char* kMetricValue = "metric_value";
inline constexpr const char* kMetadataCrc = "metadata_crc32c";

// Groups.
inline constexpr const char* kHparamsGroup = "hparams";
inline constexpr const char* kStateGroup = "state";
inline constexpr const char* kTensorsGroup = "tensors";

// Attributes of each tensor dataset.
inline constexpr const char* kDType = "dtype";
inline constexpr const char* kCrc = "crc32c";
inline constexpr const char* kCrcBlockBytes = "crc32c_block_bytes";

}  // namespace dlx::checkpoint::checkpoint_layout
