// SPDX-License-Identifier: Apache-2.0
// The trainer's side of the searcher: a validation report at the target length is a question to
// the experiment's searcher (searcher/coordinator.hpp), asked by rank 0 under the journal lock
// and broadcast, so every rank leaves report_validation() with the same answer.
#include <mpi.h>

#include <cstdint>
#include <filesystem>

#include <fmt/format.h>

#include "dlx/comm/mpi_check.hpp"
#include "dlx/searcher/coordinator.hpp"
#include "dlx/summary/experiment_summary.hpp"
#include "dlx/searcher/references.hpp"
#include "dlx/trial.hpp"

namespace dlx {

namespace {

Next next_of(searcher::Decision::Kind kind) {
  switch (kind) {
    case searcher::Decision::Kind::continue_training: return Next::train;
    case searcher::Decision::Kind::stop: return Next::stop;
    case searcher::Decision::Kind::pause: return Next::pause;
    case searcher::Decision::Kind::complete: return Next::complete;
  }
  return Next::complete;
}

}  // namespace

const char* to_string(Next next) {
  switch (next) {
    case Next::train: return "train";
    case Next::stop: return "stop";
    case Next::pause: return "pause";
    case Next::complete: return "complete";
  }
  return "?";
}

searcher::Coordinator& Trial::coordinator() {
  if (!coordinator_) {
    const auto& dir = *context_.trial().experiment_dir;
    coordinator_ = std::make_unique<searcher::Coordinator>(context_.frozen_experiment(),
                                                           dir / searcher::kJournalFileName);
    summary::write_summary_on_commit(*coordinator_, dir, fmt::format("libdlx, trial {} rank 0", id()));
  }
  return *coordinator_;
}

std::optional<std::map<std::int64_t, std::string>> Trial::searcher_references() {
  if (!in_trial()) return std::map<std::int64_t, std::string>{};
  // No journal: no searcher decision was ever taken in this experiment, so none references a
  // checkpoint (dlx-launch creates it when it asks for the first work).
  std::error_code error;
  if (!std::filesystem::exists(*context_.trial().experiment_dir / searcher::kJournalFileName, error)) {
    return std::map<std::int64_t, std::string>{};
  }
  try {
    auto& searcher = coordinator();
    searcher.refresh();  // the journal's new records only, under its lock
    return searcher::referenced_steps_of(searcher::referenced_checkpoints(searcher.state()),
                                         static_cast<int>(id()));
  } catch (const std::exception& failure) {
    fmt::print(stderr, "dlx: trial {}: cannot read the searcher's checkpoint references ({}); "
               "this save deletes no older checkpoint\n", id(), failure.what());
    return std::nullopt;
  }
}

std::optional<std::pair<std::int64_t, std::int64_t>> Trial::searcher_start_checkpoint() {
  std::error_code error;
  if (!in_trial() ||
      !std::filesystem::exists(*context_.trial().experiment_dir / searcher::kJournalFileName, error)) {
    return std::nullopt;
  }
  auto& searcher = coordinator();
  searcher.refresh();
  const auto ticket = static_cast<int>(context_.trial().ticket.value_or(id()));
  const auto work = searcher.state().work_of(ticket);
  if (!work || work->trial != id() || !work->checkpoint_trial) return std::nullopt;
  return std::pair<std::int64_t, std::int64_t>{*work->checkpoint_trial, work->start_length};
}

Next Trial::report_validation(std::int64_t step, const Metrics& metrics) {
  report(true, step, metrics);
  return ask_searcher(step, metrics);
}

Next Trial::ask_searcher(std::int64_t step, const Metrics& metrics) {
  const auto target = context_.trial().target_length;
  if (!in_trial() || target == 0 || step < target || searcher_next_ != Next::train) {
    return searcher_next_;
  }
  std::int64_t answer[2] = {0, 0};  // Next, new target
  const auto ask = [&] {
    coordinator();
    const auto& name = coordinator_->state().experiment().searcher.metric;
    const auto metric = metrics.find(name);
    if (metric == metrics.end()) {
      throw TrialConfigError(fmt::format(
          "the validation report at step {} has no '{}', the metric the experiment's searcher "
          "optimises (searcher.metric): report it, or change searcher.metric", step, name));
    }
    const auto decision = coordinator_->report_validation(static_cast<int>(id()), step, metric->second);
    answer[0] = static_cast<std::int64_t>(next_of(decision.kind));
    answer[1] = decision.target_length;
    searcher_reason_ = decision.reason;
  };
  if (mpi_) {
    on_rank0("ask the searcher", ask);
    DLX_MPI_CHECK(MPI_Bcast(answer, 2, MPI_INT64_T, 0, MPI_COMM_WORLD));
  } else {
    // No communicator (a framework program): every rank asks. The question has one id, so the
    // first rank's answer is recorded and every other rank reads the same one back.
    try {
      ask();
    } catch (const TrialConfigError& error) {
      throw TrialConfigError(fmt::format("dlx: {}", error.what()));
    } catch (const TrialError&) {
      throw;
    } catch (const std::exception& error) {
      throw TrialError(fmt::format("dlx: cannot ask the searcher: {}", error.what()));
    }
  }
  searcher_next_ = static_cast<Next>(answer[0]);
  if (searcher_next_ == Next::train) context_.trial().target_length = answer[1];
  if (rank() == 0) {
    fmt::print("dlx: trial {} step {}: searcher says {}: {}\n", id(), step, to_string(searcher_next_),
               searcher_reason_);
    std::fflush(stdout);
  }
  return searcher_next_;
}

void Trial::end_before_target() {
  const auto target = context_.trial().target_length;
  if (!in_trial() || target == 0 || searcher_next_ != Next::train) return;
  // The trainer ends training on its own (dlx.torch.Loop's stop(), a loop of its own length)
  // while the searcher waits for its report at `target`: told now, the trial counts as
  // completed without that result (ASHA: the worst at its rung, as Determined counts a trial
  // that exits early), instead of running in the journal until a waiting ticket finds it lost.
  searcher_reason_ = fmt::format("the trainer ended training before the searcher's length {}", target);
  on_rank0("tell the searcher the trial ended before its length", [&] {
    coordinator().report_exit(static_cast<int>(id()), searcher::ExitKind::completed, searcher_reason_);
  });
}

void Trial::settle_pause() {
  if (searcher_next_ != Next::pause || !in_trial()) return;
  on_rank0("tell the searcher the pause is done", [&] {
    coordinator_->report_exit(static_cast<int>(id()), searcher::ExitKind::paused, searcher_reason_);
  });
}

}  // namespace dlx
