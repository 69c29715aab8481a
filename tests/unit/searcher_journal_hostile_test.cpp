// SPDX-License-Identifier: Apache-2.0
// Crafted journals and snapshots: the scan stays linear (an 8 MiB file of 12-byte headers took
// `dlx replay` 14 s), honest damage is still told from a torn tail as before, and every malformed
// record ends in a JournalError that names its offset and what is wrong, never nlohmann's text.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "dlx/common/crc32c.hpp"
#include "dlx/config/parse.hpp"
#include "dlx/searcher/journal.hpp"
#include "dlx/searcher/method.hpp"
#include "dlx/searcher/search_state.hpp"
#include "recording_method.hpp"
#include "simulated_runner.hpp"

using namespace dlx;
using searcher::JournalError;
using searcher::scan_journal;

namespace {

constexpr std::uint64_t kMaxPayload = 1 << 20;

// The bound journal_format.cpp promises: each valid record once, then at most the bytes left
// plus one largest record while looking past an invalid one.
bool linear(const searcher::JournalScan& scan, std::size_t size) {
  return scan.checksummed_bytes <= 2 * size + kMaxPayload + 12;
}

std::string u32(std::uint32_t value) {
  std::string out;
  for (int shift = 0; shift < 32; shift += 8) out.push_back(static_cast<char>((value >> shift) & 0xFF));
  return out;
}

// `count` 12-byte headers, each claiming `length` bytes with a checksum that is wrong.
std::string crafted_headers(std::size_t count, std::uint32_t length) {
  std::string out;
  out.reserve(count * 12);
  for (std::size_t i = 0; i < count; ++i) out += "DLXJ" + u32(length) + u32(0);
  return out;
}

std::string events_bytes(int count, const std::string& prefix = "e") {
  std::string out;
  for (int i = 0; i < count; ++i) {
    out += searcher::encode_journal_record({{"id", prefix + std::to_string(i)}, {"type", "note"},
                                            {"text", std::string(200, 'x')}});
  }
  return out;
}

config::Experiment grid_experiment() {
  return config::parse_experiment("name: g\nentrypoint: x\nseed: 1\nsearcher: {name: grid, metric: loss}\n"
                                  "hyperparameters:\n  x: {type: categorical, vals: [a, b]}\n",
                                  "g.yaml");
}

// The message of applying `event` (JSON text) as the record at offset 0 of a fresh state.
std::string apply_error(const std::string& event) {
  searcher::SearchState state(grid_experiment());
  try {
    state.apply({0, nlohmann::json::parse(event)});
  } catch (const JournalError& e) {
    return e.what();
  }
  return "";
}

// `body` (SearchState::encode()) with the method's snapshot, the length-prefixed JSON text it
// starts with, replaced by `json`.
std::string with_method(const std::string& body, const std::string& json) {
  std::string length;
  for (int shift = 0; shift < 64; shift += 8) length.push_back(static_cast<char>((json.size() >> shift) & 0xFF));
  std::uint64_t old = 0;
  for (int k = 7; k >= 0; --k) old = (old << 8) | static_cast<unsigned char>(body[static_cast<std::size_t>(k)]);
  return length + json + body.substr(8 + old);
}

// The message of decoding `bytes` into a fresh state of `experiment` ("" when it decodes).
std::string decode_error(const config::Experiment& experiment, const std::string& bytes) {
  searcher::SearchState fresh(experiment);
  try {
    fresh.decode(bytes);
  } catch (const JournalError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("an 8 MiB journal of crafted headers is scanned in linear work", "[journal][hostile]") {
  const std::size_t count = (8u << 20) / 12;
  SECTION("headers from the first byte, each claiming 1 MiB") {
    const std::string bytes = crafted_headers(count, kMaxPayload);
    const auto scan = scan_journal(bytes);
    CHECK(linear(scan, bytes.size()));
    CHECK(scan.records.empty());
    CHECK_FALSE(scan.torn_tail);  // never truncated: a torn write leaves nothing like it
    CHECK(scan.corruption == "invalid record at offset 0 (checksum mismatch) followed by more record headers "
                             "than a torn write leaves (damaged or crafted bytes)");
  }
  SECTION("after real records, headers claiming a little more than what follows them") {
    const std::string good = events_bytes(100);
    const std::string bytes = good + crafted_headers(count, 4096);
    const auto scan = scan_journal(bytes, 1000);
    CHECK(linear(scan, bytes.size()));
    CHECK(scan.records.size() == 100);
    CHECK(scan.valid_end == 1000 + good.size());
    CHECK_THAT(scan.corruption, Catch::StartsWith("invalid record at offset " + std::to_string(1000 + good.size()) +
                                                  " (checksum mismatch) followed by more record headers"));
  }
  SECTION("a header whose length runs past the end: a torn tail, at once") {
    const std::string bytes = events_bytes(3) + "DLXJ" + u32(kMaxPayload) + u32(0) + std::string(1000, '\0');
    const auto scan = scan_journal(bytes);
    CHECK(scan.torn_tail);
    CHECK(scan.records.size() == 3);
    CHECK(scan.checksummed_bytes <= bytes.size());
  }
}

TEST_CASE("honest damage is still told from a torn tail, within the bound", "[journal][hostile]") {
  const std::string good = events_bytes(2000);  // about 500 KB
  const auto offsets = [&] {
    std::vector<std::size_t> out;
    for (const auto& record : scan_journal(good).records) out.push_back(record.offset);
    return out;
  }();
  SECTION("a bit flip in an early record: corruption, the records after it found") {
    std::string bytes = good;
    bytes[offsets[10] + 40] ^= 0x10;
    const auto scan = scan_journal(bytes);
    CHECK(scan.corruption == "invalid record at offset " + std::to_string(offsets[10]) +
                                 " (checksum mismatch) with valid records after it");
    CHECK(linear(scan, bytes.size()));
  }
  SECTION("a length field damaged to 1 MiB: corruption") {
    std::string bytes = good;
    bytes.replace(offsets[5] + 4, 4, u32(kMaxPayload));
    const auto scan = scan_journal(bytes);
    CHECK_THAT(scan.corruption, Catch::Contains("with valid records after it"));
    CHECK(linear(scan, bytes.size()));
  }
  SECTION("a run of zeros over several records: corruption") {
    std::string bytes = good;
    bytes.replace(offsets[100], offsets[110] - offsets[100] + 5, std::string(offsets[110] - offsets[100] + 5, '\0'));
    const auto scan = scan_journal(bytes);
    CHECK_THAT(scan.corruption, Catch::StartsWith("invalid record at offset " + std::to_string(offsets[100]) +
                                                  " (bad magic) with valid records after it"));
    CHECK(linear(scan, bytes.size()));
  }
  SECTION("the last record cut or zeroed: a torn tail") {
    CHECK(scan_journal(good.substr(0, good.size() - 7)).torn_tail);
    std::string zeroed = good;
    zeroed.replace(offsets.back() + 12, good.size() - offsets.back() - 12, good.size() - offsets.back() - 12, '\0');
    const auto scan = scan_journal(zeroed);
    CHECK(scan.torn_tail);
    CHECK(scan.corruption.empty());
    CHECK(scan.records.size() == 1999);
  }
}

TEST_CASE("a record nested deeper than the searcher writes is not a journal event", "[journal][hostile]") {
  const auto nested = [](int levels) {
    return R"({"id":"n","type":"note","x":)" + std::string(static_cast<std::size_t>(levels), '[') +
           std::string(static_cast<std::size_t>(levels), ']') + "}";
  };
  const auto record_of = [](const std::string& payload) {
    return "DLXJ" + u32(static_cast<std::uint32_t>(payload.size())) +
           u32(dlx::crc32c(payload)) + payload;
  };
  CHECK(scan_journal(record_of(nested(63))).records.size() == 1);  // 64 levels with the event's own
  const auto deep = scan_journal(record_of(nested(500'000)));      // fits in a record's 1 MiB
  CHECK(deep.records.empty());
  CHECK(deep.corruption == "record at offset 0 is not a journal event (a JSON object with a string \"id\", "
                           "nested at most 64 levels)");
}

TEST_CASE("malformed searcher events: a JournalError with the offset, the field and what is wrong",
          "[journal][hostile]") {
  const std::string work = R"({"kind":"train","trial":0,"hparams":[["x","a"]],"start_length":0,)"
                           R"("checkpoint_trial":null,"target_length":0,"reason":"r"})";
  struct Row {
    std::string event, message;
  };
  auto row = GENERATE_COPY(values<Row>({
      {R"({"id":"work/0","type":"work","ticket":"zero","work":)" + work + "}",
       "journal record at offset 0 (work/0): event: field \"ticket\" must be an integer, found a string"},
      {R"({"id":"work/0","type":"work","ticket":1e300,"work":)" + work + "}",
       "journal record at offset 0 (work/0): event: field \"ticket\": 1e+300 is not an integer from -2147483648 "
       "to 2147483647"},
      {R"({"id":"work/0","type":"work","ticket":99999999999999999999,"work":)" + work + "}",
       "journal record at offset 0 (work/0): event: field \"ticket\": 1e+20 is not an integer from"},
      {R"({"id":"work/0","type":"work","ticket":4294967296,"work":)" + work + "}",
       "event: field \"ticket\": 4294967296 is not an integer from -2147483648 to 2147483647"},
      {R"({"id":"work/0","type":"work","ticket":0})", "journal record at offset 0 (work/0): event: field \"work\" is missing"},
      {R"({"id":"work/0","type":"work","ticket":0,"work":[]})", "journal record at offset 0 (work/0): work: expected an object, found an array"},
      {R"({"id":"x","type":5})", "journal record at offset 0 (x): event: field \"type\" must be a string, found a number"},
      {R"({"id":"work/0","type":"work","ticket":0,"work":{"kind":"train","trial":1e300}})",
       "work: field \"trial\": 1e+300 is not an integer from"},
      {R"({"id":"work/0","type":"work","ticket":0,"work":{"kind":"train","trial":0,"hparams":"oops"}})",
       "hparams: expected a list of [name, value] pairs, found a string"},
      {R"({"id":"work/0","type":"work","ticket":0,"work":{"kind":"\u001b[2Jtrain"}})",
       "unknown work kind \"\\x1b[2Jtrain\""},
      {R"({"id":"validation/0/16","type":"validation","trial":0,"length":16,"metric":"high","decision":{}})",
       "event: field \"metric\" must be a number, found a string"},
      {R"({"id":"validation/5/16","type":"validation","trial":5,"length":16,"metric":0.5,)"
       R"("decision":{"kind":"complete","target_length":0,"reason":"r"}})",
       "journal record at offset 0 (validation/5/16): searcher: validation for trial 5, which no ticket was given"},
      {R"({"id":"exit/0","type":"exit","trial":0,"how":"\u001b]0;owned\u0007"})",
       "journal record at offset 0 (exit/0): unknown exit kind \"\\x1b]0;owned\\x07\""},
      {R"({"id":"exit/0","type":"exit","trial":0,"how":"failed","detail":7})",
       "event: field \"detail\" must be a string, found a number"},
  }));
  INFO(row.event);
  const std::string message = apply_error(row.event);
  CHECK_THAT(message, Catch::Contains(row.message));
  CHECK(message.find("json.exception") == std::string::npos);
}

TEST_CASE("a crafted hparams list is read in linear time, a repeated name keeps its place", "[journal][hostile]") {
  nlohmann::json pairs = nlohmann::json::array();
  for (int i = 0; i < 200'000; ++i) pairs.push_back({"p" + std::to_string(i % 100'000), i});
  searcher::Work work;
  work.kind = searcher::Work::Kind::train;
  auto json = searcher::to_json(work);
  json["hparams"] = pairs;
  const auto read = searcher::work_from_json(json);
  REQUIRE(read.hparams.size() == 100'000);
  CHECK(read.hparams.begin().key() == "p0");
  CHECK(read.hparams["p0"] == 100'000);  // the last value, at the first place
}

TEST_CASE("a crafted snapshot body is a JournalError naming what is wrong", "[journal][hostile][snapshot]") {
  const auto experiment = grid_experiment();
  const std::string body = searcher::SearchState(experiment).encode();
  const auto with = [&](const std::string& json) { return decode_error(experiment, with_method(body, json)); };
  CHECK(with(R"({"issued":[],"sampler":null})") == "");
  CHECK_THAT(with(R"({"issued":[[1e300,null]],"sampler":null})"),
             Catch::Contains("the method's snapshot does not restore (searcher snapshot: a value: 1e+300 is not an "
                             "integer from -2147483648 to 2147483647)"));
  const std::string missing = with("{}");
  CHECK_THAT(missing, Catch::Contains("searcher state snapshot: the method's snapshot does not restore (a field is "
                                      "missing or has the wrong type) at byte"));
  CHECK(missing.find("json.exception") == std::string::npos);
  CHECK_THAT(with(std::string(100'000, '[') + std::string(100'000, ']')),
             Catch::Contains("the method's snapshot is not JSON nested at most 64 levels"));
}

TEST_CASE("a crafted ASHA snapshot cannot index past its rungs, brackets or trials", "[journal][hostile][snapshot]") {
  // Found by tests/fuzz/journal_fuzz.cpp: a rung, a result count, a bracket or a trial count taken
  // from the snapshot as it was indexed the rung tables out of bounds.
  const auto experiment = config::parse_experiment(
      "name: a\nentrypoint: x\nseed: 3\nhyperparameters:\n  x: {type: double, minval: 0, maxval: 1}\n"
      "  y: {type: double, minval: 0, maxval: 1}\nsearcher: {name: async_halving, metric: loss, max_trials: 12, "
      "divisor: 2, max_rungs: 3, max_length: {batches: 32}}\n",
      "a.yaml");
  dlx::testing::RecordingMethod method(searcher::make_method(experiment));
  simulation::SimulationOptions options;
  options.workers = 3;
  options.tickets = searcher::ticket_count(experiment);
  options.curve = simulation::synthetic_curve(5, 0.1, 32);
  REQUIRE(simulation::simulate(method, options).violations.empty());
  searcher::SearchState state(experiment);
  for (std::size_t i = 0; i < method.events.size(); ++i) state.apply({i, method.events[i]});
  const std::string body = state.encode();
  const nlohmann::json snapshot = state.method().snapshot();
  CHECK(decode_error(experiment, with_method(body, snapshot.dump())) == "");
  // A paused trial: [id, "paused", rung, results].
  auto& trials = snapshot["brackets"][0]["trials"];
  const auto paused = std::find_if(trials.begin(), trials.end(), [](const auto& row) { return row[1] == "paused"; });
  REQUIRE(paused != trials.end());
  const auto index = static_cast<std::size_t>(paused - trials.begin());
  const auto mutated = [&](const auto& change) {
    nlohmann::json copy = snapshot;
    change(copy);
    return decode_error(experiment, with_method(body, copy.dump()));
  };
  CHECK_THAT(mutated([&](nlohmann::json& s) { s["brackets"][0]["trials"][index][2] = 99; }),
             Catch::Contains("searcher: ASHA snapshot: a paused trial at rung 99 with"));
  CHECK_THAT(mutated([&](nlohmann::json& s) { s["brackets"][0]["trials"][index][3] = nlohmann::json::array(); }),
             Catch::Contains("a paused trial at rung") && Catch::Contains("with 0 results, in a bracket of 3 rungs"));
  CHECK_THAT(mutated([&](nlohmann::json& s) { s["created"] = -1; }),
             Catch::Contains("searcher: ASHA snapshot: -1 trials created, of 12"));
  CHECK_THAT(mutated([&](nlohmann::json& s) { s["trials"][0][1] = 5; }),
             Catch::Contains("searcher: ASHA snapshot: bracket 5 of 1"));
}
