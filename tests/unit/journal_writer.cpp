// SPDX-License-Identifier: Apache-2.0
// Test helper for the cluster-level journal test: `journal_writer append FILE N` appends N events
// with ids "<node>-<rank>-<k>"; `journal_writer check FILE EXPECTED` prints the journal's state and
// exits non-zero unless it holds exactly EXPECTED distinct valid events and nothing else.
// `journal_writer search DIR 0` runs one ASHA trial (stopping variant) through the coordinator of
// the experiment in DIR, as ticket SLURM_PROCID; `journal_writer search-check DIR TICKETS` replays
// the journal (every recorded answer checked against the method's), and exits non-zero unless
// every ticket got its work, every decision was recorded once, and the live state equals replay.
#include <cstdio>
#include <filesystem>
#include <cstdlib>
#include <set>
#include <string>

#include "dlx/config/parse.hpp"
#include "dlx/searcher/coordinator.hpp"
#include "dlx/searcher/journal.hpp"
#include "dlx/searcher/search_state.hpp"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: journal_writer append|check FILE N\n");
    return 2;
  }
  const std::string mode = argv[1];
  if (mode == "search" || mode == "search-check") {
    try {
      const std::filesystem::path dir = argv[2];
      const auto experiment = dlx::config::load_snapshot(dir);
      dlx::searcher::Coordinator coordinator(experiment, dir / "journal");
      if (mode == "search") {
        const char* rank = std::getenv("SLURM_PROCID");
        const int ticket = rank ? std::atoi(rank) : 0;
        auto work = coordinator.request_work(ticket);
        if (work.kind != dlx::searcher::Work::Kind::train) return 1;
        // A result that depends on the trial only, so the decisions depend on arrival order.
        const double loss = static_cast<double>((work.trial * 37) % 32) / 32.0;
        for (auto target = work.target_length;;) {
          auto decision = coordinator.report_validation(work.trial, target, loss - 0.01 * static_cast<double>(target));
          if (decision.kind != dlx::searcher::Decision::Kind::continue_training) return 0;
          target = decision.target_length;
        }
      }
      coordinator.refresh();  // the live state, as the next asker would see it
      const auto scan = dlx::searcher::Journal(dir / "journal").read();
      const auto replayed = dlx::searcher::replay_journal(experiment, scan);  // throws on a mismatch
      std::size_t work = 0, validations = 0;
      for (const auto& record : scan.records) {
        work += record.event["type"] == "work";
        validations += record.event["type"] == "validation";
      }
      const bool equal = replayed.to_json() == coordinator.state().to_json();
      std::printf("work %zu validations %zu duplicates %zu replay_equals_live %d\n", work, validations,
                  scan.duplicates, equal ? 1 : 0);
      return work == static_cast<std::size_t>(std::strtol(argv[3], nullptr, 10)) && validations >= work &&
                     scan.duplicates == 0 && equal
                 ? 0
                 : 1;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "journal_writer: %s\n", e.what());
      return 1;
    }
  }
  dlx::searcher::Journal journal(argv[2]);
  const long count = std::strtol(argv[3], nullptr, 10);
  try {
    if (mode == "append") {
      const char* node = std::getenv("SLURMD_NODENAME");
      const char* rank = std::getenv("SLURM_PROCID");
      for (long k = 0; k < count; ++k) {
        journal.append({{"id", std::string(node ? node : "local") + "-" + (rank ? rank : "0") + "-" + std::to_string(k)},
                        {"type", "test"}});
      }
      return 0;
    }
    auto scan = journal.read();
    std::set<std::string> nodes;  // ids are "<node>-<rank>-<k>"
    for (const auto& record : scan.records) {
      const auto id = record.event["id"].get<std::string>();
      nodes.insert(id.substr(0, id.find('-')));
    }
    std::printf("records %zu nodes %zu duplicates %zu torn_tail %d corruption '%s'\n", scan.records.size(),
                nodes.size(), scan.duplicates, scan.torn_tail ? 1 : 0, scan.corruption.c_str());
    return scan.records.size() == static_cast<std::size_t>(count) && scan.duplicates == 0 && !scan.torn_tail &&
                   scan.corruption.empty()
               ? 0
               : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "journal_writer: %s\n", e.what());
    return 1;
  }
}
