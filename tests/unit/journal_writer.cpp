// Test helper for the cluster-level journal test: `journal_writer append FILE N` appends N events
// with ids "<node>-<rank>-<k>"; `journal_writer check FILE EXPECTED` prints the journal's state and
// exits non-zero unless it holds exactly EXPECTED distinct valid events and nothing else.
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>

#include "dlx/searcher/journal.hpp"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: journal_writer append|check FILE N\n");
    return 2;
  }
  const std::string mode = argv[1];
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
