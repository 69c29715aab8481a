// SPDX-License-Identifier: Apache-2.0
// experiment.h5's writing rule and its failure handling, through real Coordinators and a real
// journal (the file's contents are checked with h5py and h5dump by searcher_experiment_h5_test.py):
// which commits rewrite the file, that it reflects the journal prefix it was written from, and
// that a failure to write it never fails the question being answered.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "dlx/h5/attributes.hpp"
#include "dlx/h5/objects.hpp"
#include "dlx/common/durable_file.hpp"
#include "dlx/config/parse.hpp"
#include "dlx/searcher/coordinator.hpp"
#include "dlx/summary/experiment_summary.hpp"
#include "searcher_temp_dir.hpp"

using namespace dlx;
using namespace std::chrono_literals;
using searcher::Coordinator;
using searcher::Decision;
using searcher::Work;

namespace {

using dlx::testing::TempDir;

// Stopping ASHA, 4 trials, rungs at 4 and 8, keep the top half.
config::Experiment asha() {
  return config::parse_experiment(
      "name: s\nentrypoint: x\nseed: 3\nsearcher: {name: async_halving, metric: loss, max_trials: 4, divisor: 2, "
      "max_rungs: 2, max_length: {batches: 8}, stop_once: true}\n"
      "hyperparameters:\n  x: {type: double, minval: 0, maxval: 1}\n",
      "s.yaml");
}

std::string read_all(std::FILE* file) {
  std::rewind(file);
  std::string text;
  char buffer[4096];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, file)) > 0;) text.append(buffer, n);
  return text;
}

}  // namespace

TEST_CASE("experiment.h5: which commits rewrite it (trial ends, the last event, staleness, size)") {
  TempDir dir;
  Coordinator coordinator(asha(), dir.journal());
  using summary::SummaryFile;
  // For every commit: is it due for a file written just now, 1.5 s ago, 6 s ago; and for a
  // 12.6 MB file (a 10,000-trial experiment: G = 6.3 s) written 1.5 s and 7 s ago.
  std::vector<bool> fresh, recent, old, big_recent, big_old;
  coordinator.on_commit([&](const Coordinator::Commit& commit) {
    fresh.push_back(summary::summary_due(commit, SummaryFile{0ms, 1000}));
    recent.push_back(summary::summary_due(commit, SummaryFile{1500ms, 1000}));
    old.push_back(summary::summary_due(commit, SummaryFile{6000ms, 1000}));
    big_recent.push_back(summary::summary_due(commit, SummaryFile{1500ms, 12'600'000}));
    big_old.push_back(summary::summary_due(commit, SummaryFile{7000ms, 12'600'000}));
    CHECK(summary::summary_due(commit, SummaryFile{}));  // missing: always
  });
  REQUIRE(coordinator.request_work(0).kind == Work::Kind::train);  // 1: a new trial ends nothing
  REQUIRE(coordinator.request_work(1).kind == Work::Kind::train);  // 2
  CHECK(coordinator.report_validation(0, 4, 0.5).kind == Decision::Kind::continue_training);  // 3: 1st of 1
  CHECK(coordinator.report_validation(1, 4, 0.9).kind == Decision::Kind::stop);   // 4: ends trial 1
  CHECK(coordinator.report_validation(0, 8, 0.4).kind == Decision::Kind::complete);  // 5: ends trial 0
  REQUIRE(coordinator.request_work(2).kind == Work::Kind::train);  // 6
  REQUIRE(coordinator.request_work(3).kind == Work::Kind::train);  // 7: every ticket answered
  CHECK(coordinator.report_validation(2, 4, 0.1).kind == Decision::Kind::continue_training);  // 8
  CHECK(coordinator.report_validation(3, 4, 0.95).kind == Decision::Kind::stop);  // 9: trial 2 still runs
  CHECK_FALSE(summary::experiment_finished(coordinator.state()));
  CHECK(coordinator.report_validation(2, 8, 0.3).kind == Decision::Kind::complete);  // 10: the last one
  CHECK(summary::experiment_finished(coordinator.state()));
  coordinator.report_exit(0, searcher::ExitKind::failed, "crash 6 is past max_restarts 5");  // 11
  REQUIRE(coordinator.request_work(9).kind == Work::Kind::none);  // 12: a ticket with nothing to do
  const auto before = fresh.size();
  coordinator.refresh();  // nothing appended: no commit
  CHECK(fresh.size() == before);
  coordinator.commit_now();  // 13: forced
  using B = std::vector<bool>;
  CHECK(fresh == B{false, false, false, false, false, false, false, false, false, true, true, true, true});
  CHECK(recent == B{false, false, false, true, true, false, false, false, true, true, true, true, true});
  CHECK(old == B(13, true));
  CHECK(big_recent == B{false, false, false, false, false, false, false, false, false, true, true, true, true});
  CHECK(big_old == B(13, true));
}

TEST_CASE("experiment.h5: trials write it on their commits, reflecting the journal they committed") {
  TempDir dir;
  const auto experiment = asha();
  Coordinator a(experiment, dir.journal()), b(experiment, dir.journal());
  // G of 0 (no floor, and rewrites assumed instant): every trial end rewrites it (the default
  // G of 1 s would skip the ends below, a few ms apart).
  const summary::SummaryPolicy eager{.min_gap = 0ms, .max_staleness = 5000ms, .assumed_bytes_per_second = 1e18};
  summary::write_summary_on_commit(a, dir.path, "process a", stderr, eager);
  summary::write_summary_on_commit(b, dir.path, "process b", stderr, eager);
  a.request_work(0);
  REQUIRE(std::filesystem::exists(dir.summary()));  // missing: the first commit writes it
  b.request_work(1);
  a.report_validation(0, 4, 0.5);
  b.report_validation(1, 4, 0.9);  // a stop: rewritten by b
  {
    auto file = h5::open_file_read_only(dir.summary());
    auto root = h5::open_root_group(file.get(), dir.summary());
    CHECK(h5::read_int_attribute(root.get(), "format_version", dir.summary()) == 1);
    CHECK(h5::read_string_attribute(root.get(), "written_by", dir.summary()) == "process b");
    CHECK(h5::read_int64_attribute(root.get(), "decisions", dir.summary()) == 4);
    CHECK(h5::read_int64_attribute(root.get(), "trials", dir.summary()) == 2);
    CHECK(static_cast<std::uintmax_t>(h5::read_int64_attribute(root.get(), "journal_bytes", dir.summary())) ==
          std::filesystem::file_size(dir.journal()));
    CHECK(h5::link_names(root.get(), dir.summary()) ==
          std::vector<std::string>{"config", "decisions", "trial_files", "trials"});
    auto links = h5::open_group(root.get(), "trial_files", dir.summary());
    CHECK(h5::link_names(links.get(), dir.summary()) == std::vector<std::string>{"0", "1"});
  }
  // No temporary file is left beside it.
  for (const auto& entry : std::filesystem::directory_iterator(dir.path)) {
    CHECK_FALSE(is_temporary_name(entry.path().filename().string()));
  }
}

TEST_CASE("experiment.h5: a failure to write it warns once and the trial goes on") {
  TempDir dir;
  const auto experiment = asha();
  std::filesystem::create_directories(dir.summary() / "in-the-way");  // rename onto it fails
  std::FILE* log = std::tmpfile();
  REQUIRE(log);
  Coordinator coordinator(experiment, dir.journal());
  summary::write_summary_on_commit(coordinator, dir.path, "t", log);  // in the way: due at every commit
  CHECK(coordinator.request_work(0).kind == Work::Kind::train);
  CHECK(coordinator.report_validation(0, 4, 0.5).kind == Decision::Kind::continue_training);
  CHECK(coordinator.report_validation(0, 8, 0.4).kind == Decision::Kind::complete);
  const auto warnings = read_all(log);
  std::fclose(log);
  INFO(warnings);
  CHECK(warnings.find("dlx: warning: cannot write " + dir.summary().string()) != std::string::npos);
  CHECK(warnings.find("training goes on") != std::string::npos);
  CHECK(warnings.find("dlx replay --write-h5") != std::string::npos);
  // Once, although three commits failed.
  CHECK(warnings.find("dlx: warning", warnings.find("dlx: warning") + 1) == std::string::npos);
  // Every answer is in the journal.
  CHECK(searcher::Journal(dir.journal()).read().records.size() == 3);
  // And the tools' rewrite refuses with the reason, naming the file.
  CHECK_THROWS_WITH(summary::rewrite_experiment_summary(dir.path, experiment, "tool"),
                    Catch::Contains("cannot write " + dir.summary().string()));
}

TEST_CASE("experiment.h5: the tools' rewrite needs a journal") {
  TempDir dir;
  CHECK_THROWS_WITH(summary::rewrite_experiment_summary(dir.path, asha(), "tool"),
                    Catch::Contains("has no journal yet"));
  CHECK_FALSE(std::filesystem::exists(dir.journal()));  // and did not create one
  CHECK_FALSE(summary::summary_stale(dir.path));
}
