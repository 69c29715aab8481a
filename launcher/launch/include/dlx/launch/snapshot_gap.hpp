// SPDX-License-Identifier: Apache-2.0
#pragma once
// A trainer that crashed on a file or module its code snapshot left out.
//
// Trials run in a copy of the code snapshot (code_workdir.hpp), which holds what git lists in the
// submit directory's work tree minus what .gitignore and .dlxignore exclude. A script that reads
// `traindata.pt` beside itself, where `*.pt` is in .gitignore, ran by hand and fails in every
// trial with "FileNotFoundError: [Errno 2] No such file or directory: 'traindata.pt'", and so does
// every restart: the snapshot is frozen at submission. Left to the crash rules it was requeued
// until the same crash came three times in a row, each attempt after waiting in the queue again,
// and nothing said why the file was missing.
//
// From the trainer's last error line dlx-launch takes the path (Python's FileNotFoundError and
// OSError, numpy's "... not found.", h5py's "name = '...', errno = 2") or the module
// (ModuleNotFoundError), resolves it as the trainer did (relative to its working directory, or
// absolute inside the copy), and compares the snapshot with the directory it was made from
// (code.json's `source`, as the user sees it on shared storage): a name the snapshot lacks and
// the source has is a gap. So is a relative path that leads out of the copy ("../data/x.csv")
// where the same path from the submit directory exists. Either way a restart would fail alike:
// the trial is failed at once, and the message says what was left out and why (a .gitignore or
// .dlxignore rule, a submodule or a link the snapshot does not copy, or a file made after the
// submission) and how to get it to the trials. A name the source lacks too, or one the snapshot
// has, is not a gap: the crash is left to the usual rules. Only the rank whose trainer crashed
// looks (the source may be mounted on the submit host's side only); its answer travels with the
// crash to the other ranks (peer_crash.hpp).
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dlx::launch {

// What code.json says about the snapshot, as far as a crash's explanation needs it.
struct SnapshotOrigin {
  std::filesystem::path snapshot{};  // <experiment>/code
  std::filesystem::path source{};    // the directory copied at submission
  std::filesystem::path workdir{};   // where trials start, relative to both ("" for the top)
  bool git = false;                // source is a git work tree
  std::int64_t created_unix = 0;   // when the snapshot was made
  std::vector<std::pair<std::string, std::string>> skipped{};  // code.json's skipped: path, reason
};

// The name a trainer's error line says it could not find.
struct MissingName {
  enum class Kind { file, module };
  Kind kind = Kind::file;
  std::string name;  // a path as the trainer gave it, or a dotted module name
};

// Pure: the file or module `error_line` (a crash's last error line) says is missing, or nullopt.
std::optional<MissingName> missing_name(std::string_view error_line);

// Why the crash whose last error line is `error_line` is a gap in the snapshot, or nullopt.
// `code_dir`: the top of the copy the trainer ran in (DLX_CODE_DIR); `command`: the trainer's
// command (its *.py arguments are where Python looks for modules first). Reads the snapshot and
// the source; never throws.
std::optional<std::string> snapshot_gap(std::string_view error_line, const SnapshotOrigin& origin,
                                        const std::filesystem::path& code_dir,
                                        const std::vector<std::string>& command) noexcept;

}  // namespace dlx::launch
