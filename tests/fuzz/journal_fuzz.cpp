// SPDX-License-Identifier: Apache-2.0
// libFuzzer target over the journal and journal-snapshot decoders: the code `dlx replay`,
// `dlx status` and every dlx-launch run on bytes from shared storage, which another user may have
// written. Any input must end in a result or a JournalError (JournalMismatch included): never a
// crash, a hang, a leak, a sanitizer report or another exception type (which the tools would have
// to show as a library's bare text). Built with clang, -fsanitize=fuzzer,address,undefined.
//
// Input: one selector byte, then the bytes. The selector's low three bits pick the experiment (the
// searchers: grid, random with TPE, ASHA stopping and promoting, adaptive ASHA, PBT), so that every
// method's replay and restore run; bits 3 and 5 pick what the bytes are:
//   journal (neither)  a journal file: scan_journal, then a SearchState fed every record (as dlx
//                      replay, which keeps the journal's answers past a mismatch, when bit 4 is
//                      set; as a live coordinator, which stops at one, when not), then its
//                      encode/decode round trip and JSON;
//   events (bit 5)     journal events, one JSON text per line, each framed as a record with its
//                      right checksum, then the same: mutations reach the events' decoding and
//                      the methods instead of failing the checksum;
//   snapshot (bit 3)   a snapshot body: SearchState::decode (what catch_up does once the checksums
//                      match), then the same round trip.
// Seeds in tests/fuzz/corpus/journal/: real journals, their events and snapshot bodies of each
// method, and a few crafted ones.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "dlx/common/crc32c.hpp"
#include "dlx/config/parse.hpp"
#include "dlx/searcher/journal.hpp"
#include "dlx/searcher/search_state.hpp"

namespace {

const std::vector<dlx::config::Experiment>& experiments() {
  static const std::vector<dlx::config::Experiment> all = [] {
    const std::string head = "name: f\nentrypoint: x\nseed: 7\nhyperparameters:\n"
                             "  x: {type: double, minval: 0, maxval: 1, count: 3}\n"
                             "  y: {type: int, minval: 1, maxval: 4, count: 2}\n  z: {type: categorical, vals: [a, b]}\n";
    const std::vector<std::string> searchers = {
        "{name: grid, metric: loss, max_length: {batches: 16}}",
        "{name: random, metric: loss, max_trials: 12, max_length: {batches: 16}, sampler: tpe, "
        "tpe: {startup_trials: 3}}",
        "{name: async_halving, metric: loss, max_trials: 12, divisor: 2, max_rungs: 3, max_length: {batches: 32}, "
        "stop_once: true}",
        "{name: async_halving, metric: loss, max_trials: 12, divisor: 2, max_rungs: 3, max_length: {batches: 32}}",
        "{name: adaptive_asha, metric: loss, max_trials: 12, divisor: 2, max_rungs: 3, max_length: {batches: 32}}",
        "{name: pbt, metric: loss, population_size: 4, num_rounds: 3, length_per_round: {batches: 10}}",
    };
    std::vector<dlx::config::Experiment> out;
    for (const auto& searcher : searchers) {
      out.push_back(dlx::config::parse_experiment(head + "searcher: " + searcher + "\n", "fuzz.yaml"));
    }
    return out;
  }();
  return all;
}

// `lines` as journal records, each with its right checksum.
std::string framed(const std::string& lines) {
  std::string out;
  for (std::size_t at = 0; at < lines.size();) {
    const auto end = std::min(lines.find('\n', at), lines.size());
    const std::string payload = lines.substr(at, end - at);
    const auto u32 = [&](std::uint32_t value) {
      for (int shift = 0; shift < 32; shift += 8) out.push_back(static_cast<char>((value >> shift) & 0xFF));
    };
    out += "DLXJ";
    u32(static_cast<std::uint32_t>(payload.size()));
    u32(dlx::crc32c(payload));
    out += payload;
    at = end + 1;
  }
  return out;
}

// What any state must survive: its binary form decodes to the same state, and its JSON prints.
void round_trip(const dlx::searcher::SearchState& state) {
  const std::string bytes = state.encode();
  dlx::searcher::SearchState again(state.experiment());
  again.decode(bytes);
  if (again.encode() != bytes) std::abort();
  (void)state.to_json().dump();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const auto& all = experiments();
  const std::uint8_t selector = data[0];
  const auto& experiment = all[(selector & 7u) % all.size()];
  const std::string bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    dlx::searcher::SearchState state(experiment);
    if ((selector & 8u) == 0) {
      const std::string journal = (selector & 32u) ? framed(bytes) : bytes;
      const auto scan = dlx::searcher::scan_journal(journal);
      // The scan's work is linear whatever the bytes (journal_format.cpp).
      if (scan.checksummed_bytes > 2 * journal.size() + (1u << 20) + 12) std::abort();
      if (selector & 16u) state.keep_recorded_after_mismatch();
      for (const auto& record : scan.records) state.apply(record);
    } else {
      state.decode(bytes);
    }
    round_trip(state);
  } catch (const dlx::searcher::JournalError&) {
    // the expected outcome for bad bytes
  }
  return 0;
}
