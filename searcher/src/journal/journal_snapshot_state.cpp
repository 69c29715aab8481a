// SPDX-License-Identifier: Apache-2.0
// SearchState in the journal snapshot's binary form (the file around it: journal_snapshot.hpp).
//
// Why binary: at 10,000 trials the state as JSON is 17 MB, larger than the 9 MB journal it
// replaces, and nlohmann's parser (text, CBOR or MessagePack alike) spends its time building the
// document, so loading it cost as much as replaying the journal. Here every table is a count and
// fixed-order fields: integers and doubles as their 8 little-endian bytes (doubles exact), strings
// as a u64 length and the bytes, optionals as a presence byte and the value. Only the method's
// own snapshot (Method::snapshot(), owned by each method) stays JSON text, parsed once.
//
// Body, version 2 (as version 1; the method snapshots inside changed), in this order:
//   str   method snapshot (JSON text)
//   i64   unsettled
//   u64 n, n x str                          applied event ids, sorted
//   u64 n, n x trial                        trials by id
//   u64 n, n x (i64 ticket, work)           recorded work by ticket
//   u64 n, n x (i64 trial, i64 length, decision)   recorded decisions by (trial, length)
//   u64 n, n x entry                        decisions, journal order
// trial:    i64 id, hparams, str status, opt i64 ticket, i64 target_length, i64 last_length,
//           opt f64 last_metric, opt f64 best_metric, i64 best_length, i64 reports, i64 tasks,
//           str failure, str reason, u8 settled
// work:     u8 kind (Work::Kind), i64 trial, hparams, i64 start_length, opt i64 checkpoint_trial,
//           i64 target_length, str reason, opt ranking
// decision: u8 kind (Decision::Kind), i64 target_length, str reason, opt ranking
// entry:    u64 offset, str type, opt i64 ticket, i64 trial, i64 length, opt f64 metric, str action,
//           i64 target_length, str reason, opt ranking, i64 unix
// ranking:  i64 rung, i64 rank, i64 peers, i64 keep
// hparams:  u8 0 (none) | u8 1, u64 n, n x (str name, value)
// value:    u8 tag then 'i' i64 | 'u' u64 | 'd' f64 | 'b' u8 | 's' str | 'z' (null) | 'j' str (JSON)
#include <new>
#include <unordered_set>

#include <fmt/format.h>

#include "dlx/searcher/search_state.hpp"
#include "journal_snapshot_bytes.hpp"
#include "json_limits.hpp"

namespace dlx::searcher {

namespace {

using detail::ByteReader;
using detail::ByteWriter;

template <typename T>
void put_optional(ByteWriter& out, const std::optional<T>& value) {
  out.boolean(value.has_value());
  if (!value) return;
  if constexpr (std::is_same_v<T, double>) {
    out.f64(*value);
  } else {
    out.i64(*value);
  }
}

std::optional<int> get_optional_int(ByteReader& in) {
  if (!in.boolean()) return std::nullopt;
  return in.i32();
}

std::optional<double> get_optional_double(ByteReader& in) {
  if (!in.boolean()) return std::nullopt;
  return in.f64();
}

void put_ranking(ByteWriter& out, const std::optional<Ranking>& ranking) {
  out.boolean(ranking.has_value());
  if (!ranking) return;
  out.i64(ranking->rung);
  out.i64(ranking->rank);
  out.i64(ranking->peers);
  out.i64(ranking->keep);
}

std::optional<Ranking> get_ranking(ByteReader& in) {
  if (!in.boolean()) return std::nullopt;
  Ranking ranking;
  ranking.rung = in.i32();
  ranking.rank = in.i32();
  ranking.peers = in.i32();
  ranking.keep = in.i32();
  return ranking;
}

void put_value(ByteWriter& out, const nlohmann::ordered_json& value) {
  if (value.is_number_integer() && !value.is_number_unsigned()) {
    out.u8('i');
    out.i64(value.get<std::int64_t>());
  } else if (value.is_number_unsigned()) {
    out.u8('u');
    out.u64(value.get<std::uint64_t>());
  } else if (value.is_number_float()) {
    out.u8('d');
    out.f64(value.get<double>());
  } else if (value.is_boolean()) {
    out.u8('b');
    out.boolean(value.get<bool>());
  } else if (value.is_string()) {
    out.u8('s');
    out.str(value.get_ref<const std::string&>());
  } else if (value.is_null()) {
    out.u8('z');
  } else {
    out.u8('j');
    out.str(value.dump());
  }
}

nlohmann::ordered_json get_value(ByteReader& in) {
  const auto tag = in.u8();
  switch (tag) {
    case 'i': return in.i64();
    case 'u': return in.u64();
    case 'd': return in.f64();
    case 'b': return in.boolean();
    case 's': return std::string(in.str());
    case 'z': return nullptr;
    case 'j': {
      auto json = detail::parse_json_within<nlohmann::ordered_json>(in.str(), detail::kMaxJsonDepth);
      if (json.is_discarded()) {
        in.fail(fmt::format("a hyperparameter value is not JSON nested at most {} levels", detail::kMaxJsonDepth));
      }
      return json;
    }
    default: in.fail(fmt::format("unknown value tag {}", tag));
  }
}

void put_hparams(ByteWriter& out, const nlohmann::ordered_json& hparams) {
  if (!hparams.is_object()) {
    if (!hparams.is_null()) throw JournalError("searcher state: hyperparameters that are not an object");
    out.u8(0);
    return;
  }
  out.u8(1);
  out.u64(hparams.size());
  for (const auto& [name, value] : hparams.items()) {
    out.str(name);
    put_value(out, value);
  }
}

nlohmann::ordered_json get_hparams(ByteReader& in) {
  if (in.u8() == 0) return nullptr;
  nlohmann::ordered_json hparams = nlohmann::ordered_json::object();
  const auto n = in.count(10);
  // Appended, not hparams[name] = ... (a linear search per name: quadratic for a crafted count);
  // put_hparams writes each name once, so a repeated one is malformed.
  auto& members = hparams.get_ref<nlohmann::ordered_json::object_t&>();
  std::unordered_set<std::string_view> names;
  for (std::size_t i = 0; i < n; ++i) {
    const std::string_view name = in.str();
    if (!names.insert(name).second) in.fail("a hyperparameter name repeated");
    members.emplace_back(std::string(name), get_value(in));
  }
  return hparams;
}

template <typename Kind>
Kind get_kind(ByteReader& in, int count) {
  const auto kind = in.u8();
  if (kind >= count) in.fail(fmt::format("unknown kind {}", kind));
  return static_cast<Kind>(kind);
}

void put_work(ByteWriter& out, const Work& work) {
  out.u8(static_cast<std::uint8_t>(work.kind));
  out.i64(work.trial);
  put_hparams(out, work.hparams);
  out.i64(work.start_length);
  put_optional(out, work.checkpoint_trial);
  out.i64(work.target_length);
  out.str(work.reason);
  put_ranking(out, work.ranking);
}

Work get_work(ByteReader& in) {
  Work work;
  work.kind = get_kind<Work::Kind>(in, 3);
  work.trial = in.i32();
  work.hparams = get_hparams(in);
  work.start_length = in.i64();
  work.checkpoint_trial = get_optional_int(in);
  work.target_length = in.i64();
  work.reason = in.str();
  work.ranking = get_ranking(in);
  return work;
}

void put_decision(ByteWriter& out, const Decision& decision) {
  out.u8(static_cast<std::uint8_t>(decision.kind));
  out.i64(decision.target_length);
  out.str(decision.reason);
  put_ranking(out, decision.ranking);
}

Decision get_decision(ByteReader& in) {
  Decision decision;
  decision.kind = get_kind<Decision::Kind>(in, 4);
  decision.target_length = in.i64();
  decision.reason = in.str();
  decision.ranking = get_ranking(in);
  return decision;
}

void put_trial(ByteWriter& out, const TrialState& trial) {
  out.i64(trial.id);
  put_hparams(out, trial.hparams);
  out.str(trial.status);
  put_optional(out, trial.ticket);
  out.i64(trial.target_length);
  out.i64(trial.last_length);
  put_optional(out, trial.last_metric);
  put_optional(out, trial.best_metric);
  out.i64(trial.best_length);
  out.i64(trial.reports);
  out.i64(trial.tasks);
  out.str(trial.failure);
  out.str(trial.reason);
  out.boolean(trial.settled);
}

TrialState get_trial(ByteReader& in) {
  TrialState trial;
  trial.id = in.i32();
  trial.hparams = get_hparams(in);
  trial.status = in.str();
  trial.ticket = get_optional_int(in);
  trial.target_length = in.i64();
  trial.last_length = in.i64();
  trial.last_metric = get_optional_double(in);
  trial.best_metric = get_optional_double(in);
  trial.best_length = in.i64();
  trial.reports = in.i32();
  trial.tasks = in.i32();
  trial.failure = in.str();
  trial.reason = in.str();
  trial.settled = in.boolean();
  return trial;
}

void put_entry(ByteWriter& out, const DecisionEntry& entry) {
  out.u64(entry.offset);
  out.str(entry.type);
  put_optional(out, entry.ticket);
  out.i64(entry.trial);
  out.i64(entry.length);
  put_optional(out, entry.metric);
  out.str(entry.action);
  out.i64(entry.target_length);
  out.str(entry.reason);
  put_ranking(out, entry.ranking);
  out.i64(entry.unix_seconds);
}

DecisionEntry get_entry(ByteReader& in) {
  DecisionEntry entry;
  entry.offset = in.u64();
  entry.type = in.str();
  entry.ticket = get_optional_int(in);
  entry.trial = in.i32();
  entry.length = in.i64();
  entry.metric = get_optional_double(in);
  entry.action = in.str();
  entry.target_length = in.i64();
  entry.reason = in.str();
  entry.ranking = get_ranking(in);
  entry.unix_seconds = in.i64();
  return entry;
}

}  // namespace

std::string SearchState::encode() const {
  ByteWriter out;
  const auto method = method_->snapshot().dump();
  out.bytes().reserve(method.size() + 64 * ids_.size() + 256 * (trials_.size() + decisions_.size()) +
                      320 * (work_by_ticket_.size() + decision_by_report_.size()));
  out.str(method);
  out.i64(unsettled_);
  out.u64(ids_.size());
  for (const auto& id : ids_) out.str(id);
  out.u64(trials_.size());
  for (const auto& [id, trial] : trials_) put_trial(out, trial);
  out.u64(work_by_ticket_.size());
  for (const auto& [ticket, work] : work_by_ticket_) {
    out.i64(ticket);
    put_work(out, work);
  }
  out.u64(decision_by_report_.size());
  for (const auto& [key, decision] : decision_by_report_) {
    out.i64(key.first);
    out.i64(key.second);
    put_decision(out, decision);
  }
  out.u64(decisions_.size());
  for (const auto& entry : decisions_) put_entry(out, entry);
  return std::move(out.bytes());
}

void SearchState::decode(std::string_view bytes) {
  ByteReader in(bytes, "searcher state snapshot");
  std::unique_ptr<Method> method;
  {
    const auto json = detail::parse_json_within<nlohmann::json>(in.str(), detail::kMaxJsonDepth);
    if (json.is_discarded()) {
      in.fail(fmt::format("the method's snapshot is not JSON nested at most {} levels", detail::kMaxJsonDepth));
    }
    method = make_method(experiment_);
    try {
      method->restore(json);
    } catch (const Error& error) {
      in.fail(fmt::format("the method's snapshot does not restore ({})", error.what()));
    } catch (const std::bad_alloc&) {
      throw;
    } catch (const std::exception&) {  // nlohmann's words: a field missing or of another type
      in.fail("the method's snapshot does not restore (a field is missing or has the wrong type)");
    }
  }
  const int unsettled = in.i32();
  std::set<std::string> ids;
  for (auto n = in.count(8); n > 0; --n) ids.emplace_hint(ids.end(), in.str());
  std::map<int, TrialState> trials;
  for (auto n = in.count(8); n > 0; --n) {
    auto trial = get_trial(in);
    const int id = trial.id;
    trials.emplace_hint(trials.end(), id, std::move(trial));
  }
  std::map<int, Work> work;
  for (auto n = in.count(8); n > 0; --n) {
    const int ticket = in.i32();
    work.emplace_hint(work.end(), ticket, get_work(in));
  }
  std::map<std::pair<int, std::int64_t>, Decision> reports;
  for (auto n = in.count(16); n > 0; --n) {
    const int trial = in.i32();
    const auto length = in.i64();
    reports.emplace_hint(reports.end(), std::pair{trial, length}, get_decision(in));
  }
  std::vector<DecisionEntry> decisions;
  const auto entries = in.count(8);
  decisions.reserve(entries);
  for (std::size_t i = 0; i < entries; ++i) decisions.push_back(get_entry(in));
  if (!in.done()) in.fail("trailing bytes");
  // Nothing above threw: take it all at once, so a malformed snapshot leaves this state as it was.
  method_ = std::move(method);
  ids_ = std::move(ids);
  trials_ = std::move(trials);
  work_by_ticket_ = std::move(work);
  decision_by_report_ = std::move(reports);
  decisions_ = std::move(decisions);
  unsettled_ = unsettled;
}

}  // namespace dlx::searcher
