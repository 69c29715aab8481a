// SPDX-License-Identifier: Apache-2.0
#include "dlx/searcher/search_state.hpp"

#include <new>

#include <fmt/format.h>

#include "dlx/config/display_text.hpp"
#include "json_fields.hpp"

namespace dlx::searcher {

namespace {

const char* status_after(Decision::Kind kind) {
  switch (kind) {
    case Decision::Kind::continue_training: return "running";
    case Decision::Kind::stop: return "stopped";
    case Decision::Kind::pause: return "paused";
    case Decision::Kind::complete: return "completed";
  }
  return "running";
}

ExitKind exit_kind_from(const std::string& how) {
  if (how == "completed") return ExitKind::completed;
  if (how == "stopped") return ExitKind::stopped;
  if (how == "paused") return ExitKind::paused;
  if (how == "failed") return ExitKind::failed;
  throw JournalError(fmt::format("unknown exit kind \"{}\"", config::abbreviated(how, 32)));
}

// A recorded or computed answer in a message: its JSON, shortened (a reason may be long).
std::string shown(const nlohmann::json& answer) { return config::abbreviated(answer.dump(), 512); }

// An optional string field: `fallback` when absent, a JournalError when not a string.
std::string optional_string(const nlohmann::json& event, const char* key, const std::string& fallback) {
  return event.contains(key) ? detail::json_string(event, key, "event") : fallback;
}

std::int64_t unix_of(const nlohmann::json& event) {
  return event.contains("unix") && event["unix"].is_number_integer() ? event["unix"].get<std::int64_t>() : 0;
}

// Whether the method's answer is the one the journal recorded: field by field, what comparing
// their journal JSON (to_json in method.cpp) decides, without building two JSON objects per
// replayed event (that was a third of a full replay's time). A field added to Work or Decision
// must be added here and to its JSON form.
bool same_answer(const Work& a, const Work& b) {
  return a.kind == b.kind && a.trial == b.trial && a.start_length == b.start_length &&
         a.checkpoint_trial == b.checkpoint_trial && a.target_length == b.target_length &&
         a.ranking == b.ranking && a.reason == b.reason && a.hparams == b.hparams;
}

bool same_answer(const Decision& a, const Decision& b) {
  return a.kind == b.kind && a.target_length == b.target_length && a.ranking == b.ranking &&
         a.reason == b.reason;
}

}  // namespace

SearchState::SearchState(config::Experiment experiment)
    : experiment_(std::move(experiment)), method_(make_method(experiment_)) {}

bool SearchState::apply(const JournalRecord& record) { return apply(record, false); }

bool SearchState::apply_answered(const JournalRecord& record) { return apply(record, true); }

bool SearchState::apply(const JournalRecord& record, bool answered) {
  const auto& event = record.event;
  // Whatever a record holds, what escapes is a JournalError naming its offset and what is wrong
  // (or the JournalMismatch of a differing answer), never a library's own text.
  std::string id;
  const auto malformed = [&](const std::string& problem) {
    return JournalError(fmt::format("journal record at offset {}{}: {}", record.offset,
                                    id.empty() ? "" : fmt::format(" ({})", config::abbreviated(id)), problem));
  };
  std::string type;
  try {
    id = optional_string(event, "id", "");
    type = optional_string(event, "type", "");
  } catch (const JournalError& error) {
    throw malformed(error.what());
  }
  if (type != "work" && type != "validation" && type != "exit") return false;
  if (!ids_.insert(id).second) return false;
  answered = answered || !divergence_.empty();  // past a divergence the journal's answers stand
  try {
    if (type == "work") record_work(event, record.offset, answered);
    if (type == "validation") record_validation(event, record.offset, answered);
    if (type == "exit") record_exit(event, record.offset, answered);
  } catch (const JournalMismatch&) {
    throw;
  } catch (const Error& error) {  // a field's type or range, or the method refusing the event
    throw malformed(error.what());
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const std::exception&) {  // a library's, whose words would mean nothing to a user
    throw malformed("its values do not fit this experiment's searcher");
  }
  return true;
}

void SearchState::diverged(std::string message) {
  if (!keep_recorded_) throw JournalMismatch(message);
  divergence_ = std::move(message);
}

void SearchState::record_work(const nlohmann::json& event, std::uint64_t offset, bool answered) {
  const int ticket = detail::json_int(event, "ticket", "event");
  const Work recorded = work_from_json(detail::json_member(event, "work", "event"));
  const Work answer = answered ? recorded : method_->on_work_requested(ticket);
  if (!same_answer(answer, recorded)) {
    diverged(fmt::format(
        "journal record at offset {}: the journal gave ticket {} {} but the searcher now answers "
        "{}: the journal was written by a different searcher (another dlx version or a changed "
        "experiment.yaml)", offset, ticket, shown(searcher::to_json(recorded)),
        shown(searcher::to_json(answer))));
  }
  work_by_ticket_[ticket] = recorded;
  DecisionEntry entry{.offset = offset, .type = "work", .ticket = ticket, .trial = recorded.trial,
                      .length = recorded.start_length, .metric = std::nullopt,
                      .action = to_string(recorded.kind), .target_length = recorded.target_length,
                      .reason = recorded.reason, .ranking = recorded.ranking,
                      .unix_seconds = unix_of(event)};
  decisions_.push_back(entry);
  if (recorded.kind != Work::Kind::train) return;
  auto& trial = trials_[recorded.trial];
  trial.id = recorded.trial;
  trial.hparams = recorded.hparams;
  trial.status = "running";
  trial.ticket = ticket;
  ++trial.tasks;
  trial.target_length = recorded.target_length;
  trial.reason = recorded.reason;
}

void SearchState::record_validation(const nlohmann::json& event, std::uint64_t offset, bool answered) {
  const int id = detail::json_int(event, "trial", "event");
  const auto length = detail::json_int64(event, "length", "event");
  const double metric = detail::json_number(event, "metric", "event");
  const Decision recorded = decision_from_json(detail::json_member(event, "decision", "event"));
  const Decision answer = answered ? recorded : method_->on_validation(id, length, metric);
  if (!same_answer(answer, recorded)) {
    diverged(fmt::format(
        "journal record at offset {}: the journal told trial {} at length {} {} but the searcher "
        "now answers {}: the journal was written by a different searcher (another dlx version or "
        "a changed experiment.yaml)", offset, id, length, shown(searcher::to_json(recorded)),
        shown(searcher::to_json(answer))));
  }
  decision_by_report_[{id, length}] = recorded;
  auto& trial = trials_[id];
  trial.id = id;
  trial.status = status_after(recorded.kind);
  const bool settled = recorded.kind != Decision::Kind::pause;
  if (trial.settled != settled) unsettled_ += settled ? -1 : 1;
  trial.settled = settled;
  trial.last_length = length;
  trial.last_metric = metric;
  ++trial.reports;
  const bool smaller = experiment_.searcher.smaller_is_better;
  if (!trial.best_metric || (smaller ? metric < *trial.best_metric : metric > *trial.best_metric)) {
    trial.best_metric = metric;
    trial.best_length = length;
  }
  trial.reason = recorded.reason;
  if (recorded.kind == Decision::Kind::continue_training) trial.target_length = recorded.target_length;
  decisions_.push_back({.offset = offset, .type = "validation", .ticket = trial.ticket, .trial = id,
                        .length = length, .metric = metric, .action = to_string(recorded.kind),
                        .target_length = recorded.target_length, .reason = recorded.reason,
                        .ranking = recorded.ranking, .unix_seconds = unix_of(event)});
}

void SearchState::record_exit(const nlohmann::json& event, std::uint64_t offset, bool answered) {
  const int id = detail::json_int(event, "trial", "event");
  const auto how = detail::json_string(event, "how", "event");
  const ExitKind kind = exit_kind_from(how);  // checked even when the method is not asked
  if (!answered) method_->on_trial_exited(id, kind);
  auto& trial = trials_[id];
  trial.id = id;
  trial.status = how;
  if (!trial.settled) --unsettled_;
  trial.settled = true;
  trial.reason = optional_string(event, "detail", "");
  if (how == "failed") trial.failure = trial.reason;
  decisions_.push_back({.offset = offset, .type = "exit", .ticket = trial.ticket, .trial = id,
                        .length = trial.last_length, .metric = std::nullopt, .action = how,
                        .target_length = 0, .reason = trial.reason, .ranking = std::nullopt,
                        .unix_seconds = unix_of(event)});
}

std::optional<Work> SearchState::work_of(int ticket) const {
  auto found = work_by_ticket_.find(ticket);
  if (found == work_by_ticket_.end()) return std::nullopt;
  return found->second;
}

std::optional<Decision> SearchState::decision_of(int trial, std::int64_t length) const {
  auto found = decision_by_report_.find({trial, length});
  if (found == decision_by_report_.end()) return std::nullopt;
  return found->second;
}

std::optional<int> SearchState::best_trial() const {
  std::optional<int> best;
  std::int64_t best_length = -1;
  double best_metric = 0;
  const bool smaller = experiment_.searcher.smaller_is_better;
  for (const auto& [id, trial] : trials_) {
    if (!trial.last_metric || trial.status == "failed") continue;
    const double metric = *trial.last_metric;
    const bool better_metric = smaller ? metric < best_metric : metric > best_metric;
    if (trial.last_length > best_length || (trial.last_length == best_length && better_metric)) {
      best = id;
      best_length = trial.last_length;
      best_metric = metric;
    }
  }
  return best;
}

nlohmann::json SearchState::to_json() const {
  nlohmann::json trials = nlohmann::json::array();
  for (const auto& [id, trial] : trials_) {
    trials.push_back({{"trial", id}, {"hparams", trial.hparams}, {"status", trial.status},
                      {"ticket", trial.ticket ? nlohmann::json(*trial.ticket) : nlohmann::json()},
                      {"target_length", trial.target_length}, {"last_length", trial.last_length},
                      {"last_metric", trial.last_metric ? nlohmann::json(*trial.last_metric) : nlohmann::json()},
                      {"best_metric", trial.best_metric ? nlohmann::json(*trial.best_metric) : nlohmann::json()},
                      {"best_length", trial.best_length}, {"reports", trial.reports}, {"tasks", trial.tasks},
                      {"failure", trial.failure}, {"reason", trial.reason}});
  }
  const auto best = best_trial();
  return {{"events", decisions_.size()}, {"trials", trials},
          {"best_trial", best ? nlohmann::json(*best) : nlohmann::json()},
          {"method", method_->snapshot()}};
}

nlohmann::json SearchState::work_event(int ticket, const Work& work, std::int64_t unix_seconds) {
  return {{"id", fmt::format("work/{}", ticket)}, {"type", "work"}, {"ticket", ticket},
          {"work", searcher::to_json(work)}, {"unix", unix_seconds}};
}

nlohmann::json SearchState::validation_event(int trial, std::int64_t length, double metric,
                                             const Decision& decision, std::int64_t unix_seconds) {
  return {{"id", fmt::format("validation/{}/{}", trial, length)}, {"type", "validation"},
          {"trial", trial}, {"length", length}, {"metric", metric},
          {"decision", searcher::to_json(decision)}, {"unix", unix_seconds}};
}

nlohmann::json SearchState::exit_event(int trial, ExitKind how, const std::string& detail,
                                       std::int64_t length, std::int64_t unix_seconds) {
  return {{"id", fmt::format("exit/{}/{}/{}", trial, to_string(how), length)}, {"type", "exit"},
          {"trial", trial}, {"how", to_string(how)}, {"length", length}, {"detail", detail},
          {"unix", unix_seconds}};
}

void SearchState::restore_method(const nlohmann::json& snapshot) {
  auto fresh = make_method(experiment_);
  fresh->restore(snapshot);
  method_ = std::move(fresh);
}

SearchState replay_journal(const config::Experiment& experiment, const JournalScan& scan) {
  SearchState state(experiment);
  for (const auto& record : scan.records) state.apply(record);
  return state;
}

}  // namespace dlx::searcher
