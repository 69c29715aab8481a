// SPDX-License-Identifier: Apache-2.0
#pragma once
// experiment.h5: the experiment's summary for people and HDF5 tools (h5ls, h5dump, h5py,
// HDFView), with no dlx needed to read it. Layout in docs/file-format.md:
//   /config/experiment_yaml   the frozen experiment.yaml text
//   /config/search_space      one row per hyperparameter, as resolved
//   /trials                   one row per trial the searcher created
//   /decisions                one row per searcher event, with its reason and ranking
//   /trial_files/<id>         external link to trials/<id>/trial.h5
//
// It is a derived view: the journal is the source of truth, and the file says which prefix of
// the journal it reflects (attribute journal_bytes). Exactly one process writes it at a time:
// the one holding the journal's exclusive lock, right after its append is durable
// (searcher::Coordinator::on_commit), or `dlx replay|status --write-h5` under the same lock. Each write
// replaces the whole file (temporary name, fsync, rename, directory fsync), so a reader sees a
// complete old or new version.
//
// When a commit rewrites it (summary_due). A rewrite costs time under the journal lock that grows
// with the experiment (0.6-0.8 s at 10,000 trials and 33,000 decisions, a 13 MiB file, on the
// loaded 2-core test VM; docs/benchmarks.md), so not every event pays it. With G = max(1 s, 10 x the rewrite's
// estimated time) (estimated from the current file's size at 20 MB/s, so that rewrites take at
// most about a tenth of the lock's time) and S = max(5 s, G), a commit rewrites the file when
//   - the file is missing, or the commit is forced (`dlx replay --write-h5`, `dlx status`), or
//   - the commit finishes the experiment (every array task has had its answer and no trial is
//     still running or settling a pause): the last event always rewrites it, or
//   - one of its events ends a trial or an array task (a stop, complete or pause decision, an
//     exit, a ticket told there is no work) and the file is older than G, or
//   - the file is older than S.
// Staleness bound: experiment.h5 shows every event up to its last rewrite; an event after it
// appears with the first commit at least G later if it ended something, else at least S later,
// and at the latest with the experiment's last event. Small experiments (G = 1 s, S = 5 s): every
// trial end within a second. At 10,000 trials: every 7 s or so while the experiment runs. The
// owner's `dlx status` refreshes a stale file at once.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>

#include "dlx/common/error.hpp"
#include "dlx/searcher/coordinator.hpp"
#include "dlx/searcher/search_state.hpp"

namespace dlx::summary {

inline constexpr const char* kExperimentSummaryFileName = "experiment.h5";
inline constexpr int kExperimentSummaryFormatVersion = 1;

class SummaryError : public Error {
 public:
  using Error::Error;
};

// Writes <experiment_dir>/experiment.h5 from `state` (which reflects the first `journal_end`
// bytes of the journal), atomically. `writer` says who wrote it ("dlx-launch, ticket 3").
// The caller must hold the journal's exclusive lock. Throws SummaryError naming the file.
void write_experiment_summary(const std::filesystem::path& experiment_dir, const searcher::SearchState& state,
                              std::uint64_t journal_end, const std::string& writer);

struct SummaryPolicy {
  std::chrono::milliseconds min_gap{1000};        // G at least
  std::chrono::milliseconds max_staleness{5000};  // S at least
  double assumed_bytes_per_second = 20e6;         // a rewrite's speed, to estimate its time
  double max_lock_share = 0.1;                    // G = estimated time / this
};

// The existing experiment.h5 as the rule sees it.
struct SummaryFile {
  std::optional<std::chrono::milliseconds> age;  // since its last write; nullopt: missing
  std::uintmax_t bytes = 0;
};
SummaryFile summary_file(const std::filesystem::path& path);

// Whether this commit rewrites the file, by the rule above.
bool summary_due(const searcher::Coordinator::Commit& commit, const SummaryFile& file, const SummaryPolicy& policy = {});

// True when every array task has had its answer and no trial is still running or settling a
// pause: nothing more will happen unless a task is requeued.
bool experiment_finished(const searcher::SearchState& state);

// Makes `coordinator` rewrite experiment.h5 on its commits by the rule above. A failure to write
// it never fails the question being answered: the first failure is reported on `log` (later ones
// only counted, and said when a write succeeds again) and the trial goes on.
void write_summary_on_commit(searcher::Coordinator& coordinator, const std::filesystem::path& experiment_dir,
                             std::string writer, std::FILE* log = stderr, SummaryPolicy policy = {});

// Rewrites experiment.h5 from the whole journal, under the journal's exclusive lock (so even while
// trials run there is one writer): `dlx replay --write-h5`, `dlx status`. Throws SummaryError,
// JournalError (JournalMismatch when the journal was written by a different searcher).
void rewrite_experiment_summary(const std::filesystem::path& experiment_dir, const config::Experiment& experiment,
                                const std::string& writer);

// True when the experiment has a journal and experiment.h5 is missing or older than it.
bool summary_stale(const std::filesystem::path& experiment_dir);

}  // namespace dlx::summary
