// SPDX-License-Identifier: Apache-2.0
#pragma once
// The files earlier attempts of a trial kept (trial_outputs.hpp), put back into a new attempt's
// working directory.
//
// Without a code snapshot a trainer runs in the submit directory, on shared storage, and a
// requeued attempt finds there whatever the earlier ones wrote: the log.csv it appends a line to
// each epoch, the checkpoint.pth.tar its --resume reads, a TensorBoard run. In a node-local copy of
// the snapshot (the default from a git repository) it found none of that, and its log.csv,
// started afresh, then replaced the earlier attempts' whole one in <trial>/outputs/: the epochs
// before the requeue were lost. So when a rank makes the copy (under its exclusive lock, before
// the completion marker), it copies <trial>/outputs/ into it first:
//   - regular files only, in path order, at most `max_bytes` (code.keep_outputs) and
//     kMaxKeptFiles; links, other files and ".tmp." names are skipped; a file that would go over
//     the budget, or whose path the snapshot holds as a directory or a link, is left and named;
//   - a file of the snapshot at the same path is replaced (the trainer rewrote it before);
//   - each copy gets its kept file's mode and modification time, so that when the attempt ends a
//     copy still the same size and time as its kept file is not kept again (find_trainer_files);
//     one the trainer changed (log.csv with a line more) is.
// Every node of the trial gets them (any rank may read what rank 0 wrote, as it could in a shared
// directory). Nothing is restored when code.keep_outputs is false.
#include <cstdint>
#include <cstdio>
#include <filesystem>

#include "dlx/launch/trial_outputs.hpp"

namespace dlx::launch {

struct RestoredOutputs {
  std::vector<TrainerFile> restored;
  std::vector<LeftFile> left;
  std::uint64_t bytes = 0;
};

// Copies `outputs`' files into `copy` (the new copy's top, not yet marked complete) by the rule
// above. Does not throw: a file that cannot be copied is left with why; no outputs/, nothing.
RestoredOutputs restore_kept_outputs(const std::filesystem::path& outputs, const std::filesystem::path& copy,
                                     std::uint64_t max_bytes, std::size_t max_files = kMaxKeptFiles);

// Whether the copy's file (`size` bytes, written at `written`) is the one restored from
// `outputs_file` and left as it was: a regular file of the same size and modification time.
bool restored_unchanged(const std::filesystem::path& outputs_file, std::uint64_t size,
                        std::filesystem::file_time_type written);

// The log's lines (nothing when nothing was restored or left).
void print_restored_outputs(std::FILE* log, const RestoredOutputs& restored, const std::filesystem::path& outputs);

}  // namespace dlx::launch
