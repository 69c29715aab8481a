// SPDX-License-Identifier: Apache-2.0
#pragma once
// Which checkpoint a trial resumes from: the newest step-<N>.h5 that verifies (format version,
// trial, metadata checksum, every tensor CRC). Newer files that do not are skipped and reported
// with the reason (temporary file of an unfinished save, truncated, checksum mismatch, another
// trial's file, a newer format), so the trial falls back to the previous good checkpoint.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "dlx/checkpoint/checkpoint.hpp"

namespace dlx::checkpoint {

struct SkippedCheckpoint {
  std::filesystem::path path;
  std::string reason;
};

struct LatestValid {
  std::optional<std::filesystem::path> path;  // nullopt: start fresh
  std::optional<CheckpointSummary> summary;
  std::vector<SkippedCheckpoint> skipped;      // newest first
};

enum class Verification {
  full,      // read every tensor byte and compare CRCs (what a resume should use)
  metadata,  // metadata and index only (cheap: listing, retention)
};

LatestValid find_latest_valid(const std::filesystem::path& checkpoint_dir,
                              const Expectation& expect = {},
                              Verification verification = Verification::full);

// Discovery and load in one pass, for a resume: the newest step-<N>.h5 that loads with full
// verification, read once (find_latest_valid + load_checkpoint would read its bytes twice).
struct LoadedLatest {
  std::optional<Checkpoint> checkpoint;    // nullopt: start fresh
  std::optional<std::filesystem::path> path;
  std::vector<SkippedCheckpoint> skipped;  // newest first, as find_latest_valid reports them
};
LoadedLatest load_latest_valid(const std::filesystem::path& checkpoint_dir,
                               const Expectation& expect = {}, const Deferral& defer = {});

// True when `path` verifies fully; for store::latest_checkpoint's validator.
bool is_valid_checkpoint(const std::filesystem::path& path, const Expectation& expect = {});

}  // namespace dlx::checkpoint
