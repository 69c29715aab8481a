// SPDX-License-Identifier: Apache-2.0
#pragma once
// The files a trainer writes in its working directory, kept when its step ends.
//
// A trial with a code snapshot runs in a node-local copy of it (code_workdir.hpp), removed when
// the job step ends. What the trainer wrote there (torch.save(model, "model.pt"), a TensorBoard
// run, plots, a results.csv: what most public training scripts write into their working
// directory) would go with it, and a requeued attempt starts in a fresh copy. So before the last
// rank of the trial's first node removes its copy, dlx-launch copies the trainer's files into
// <trial>/outputs/ on the shared file system, each at its path relative to the copy's top:
//   - a file is the trainer's when the snapshot has no regular file at its path, or when it was
//     written after the copy was made (its mtime is later than the copy's completion marker);
//     files in __pycache__ directories (Python's bytecode of the copied modules) are not, nor is
//     a file an earlier attempt kept, restored into this copy (restored_outputs.hpp) and left
//     as it was (the kept file's size and modification time);
//   - each is copied to a temporary name beside its final one, fsynced and renamed over it
//     (durable_file.hpp): a reader sees a whole file, the previous attempt's or this one's; a
//     later attempt's file replaces an earlier one's of the same path, the others stay;
//   - at most `max_bytes` per attempt (code.keep_outputs) and kMaxKeptFiles files (each costs
//     two fsyncs), in path order; a file that would exceed either is left and named;
//   - when `out_of_time` says so (a notice is pending: the step is being ended), the files not
//     yet copied are left and named;
//   - modes are kept but never widened, and nothing for others: (mode & 0750) | 0600.
// Symbolic links, FIFOs and sockets are left and named. Temporary files of an attempt killed
// while copying (".tmp." names) are removed by the next one. The copies of the trial's other
// nodes are not kept: their last rank names what they held (write outputs on rank 0).
#include <sys/stat.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "dlx/common/unique_fd.hpp"

namespace dlx::launch {

inline constexpr std::size_t kMaxKeptFiles = 10'000;

struct TrainerFile {
  std::filesystem::path relative;  // below the copy's top
  std::uint64_t bytes = 0;
};

struct LeftFile {
  TrainerFile file;
  std::string why;  // "over code.keep_outputs", "a symbolic link", an error
};

struct TrainerFiles {
  std::vector<TrainerFile> files;  // regular files, in path order
  std::vector<LeftFile> special;   // what cannot be kept: links, FIFOs, unreadable directories
  std::uint64_t bytes() const;
};

// The trainer's files in `copy` (the node-local copy's top) against `snapshot` (<experiment>/code/),
// `copied_at` (the copy's completion marker's mtime) and `outputs` (the trial's outputs/, whose
// files were restored into the copy; empty: none), by the rule above. Does not throw: what cannot
// be read is in `special` with why.
TrainerFiles find_trainer_files(const std::filesystem::path& copy, const std::filesystem::path& snapshot,
                                std::filesystem::file_time_type copied_at, const std::filesystem::path& outputs = {});

struct KeptOutputs {
  std::vector<TrainerFile> kept;
  std::vector<LeftFile> left;
  std::uint64_t kept_bytes = 0;
};

// Copies `found`'s files from `copy` into `outputs` (created 0750 when missing) by the rule above.
// Does not throw: a file that cannot be copied is left with why.
KeptOutputs keep_trainer_files(const std::filesystem::path& copy, const TrainerFiles& found,
                               const std::filesystem::path& outputs, std::uint64_t max_bytes,
                               const std::function<bool()>& out_of_time, std::size_t max_files = kMaxKeptFiles);

// What the log lines of kept and restored files share: "a, b, c, d, e and 3 more" (the first five
// named), "1 file" / "3 files", and a file to copy opened without following a link, with its
// status (throws SystemError, or Error when it is no longer a regular file).
std::string named_files(const std::vector<TrainerFile>& files);
std::string file_count(std::size_t count);
UniqueFd open_regular_file(const std::filesystem::path& path, struct stat& status);

// The log's lines: what was kept where, and what was left and why (nothing when the trainer
// wrote nothing).
void print_kept_outputs(std::FILE* log, const KeptOutputs& outputs, const std::filesystem::path& outputs_dir);
// On a node whose copy is not kept: what the trainer wrote there, which goes with the copy.
void print_unkept_node_files(std::FILE* log, const TrainerFiles& found, const std::string& node,
                             const std::filesystem::path& outputs_dir);

}  // namespace dlx::launch
