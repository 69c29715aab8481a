// bench_searcher: the search methods on a simulated cluster (tests/unit/simulated_runner.hpp):
// N workers (array tasks running at once), a simulated clock and the synthetic learning-curve
// family documented there (two hyperparameters x, y in [0, 1]; loss falls like 1 / (1 + L / tau)
// toward a final value that depends on both; curves cross; seeded noise). One run prints
// (docs/benchmarks.md, section Searcher):
//   asha_vs_random_time_to_target   ASHA's time to fully train a top-2% configuration / random
//                                   search's, same trials, same workers          target <= 0.25
//   asha_busy_fraction              share of worker time ASHA keeps workers training or setting
//                                   up a trial while new trials remain            target >= 0.95
//   asha_4x_workers_time_to_target  ASHA's time to target with 4x the workers / with 1x
//                                                                                 target <= 0.3
//   tpe_vs_random_in_asha           ASHA's time to target with sampler: tpe / with the random
//                                   sampler                                       target < 1
//   decision_latency_us_10k         99th percentile of one on_validation / on_work_requested at
//                                   10,000 trials, in memory, real clock          target <= 50
// and the cost of one journaled event on the file system of --journal-dir (bench_searcher_journal.hpp;
// no target in the issue; the reference is a bare pwrite + fdatasync of a record's bytes there):
//   journaled_event_ms_p50|p99      1 writer process; _4w: 4 processes sharing the journal;
//                                   _h5: with experiment.h5 rewritten by its rule
//   journaled_event_vs_fdatasync    p50 of a journaled event (1 writer) / p50 of the bare fdatasync
//   experiment_h5_rewrite_ms_10k    one rewrite of experiment.h5 at 10,000 trials
//   journal_replay_ms_10k           a new process reading and replaying a 10,000-trial journal
// "Time to target" is the simulated time at which some trial first reports at max_length with a
// configuration whose noiseless final loss is in the best 1000/N % of the search space (about ten
// of the N configurations tried qualify). Time to target is heavy-tailed (random search is
// sometimes lucky in its first wave), so ratios are of mean times over --seeds seeds (each seed:
// new configurations, new noise), i.e. of expected times to target; busy is a median.
// usage: bench_searcher [--trials N] [--workers W] [--seeds S] [--latency-trials T]
//                       [--asha "divisor: 4, max_rungs: 4"] [--journal-dir DIR] [--journal-events E (0: skip)]
//                       [--smoke]
#include <algorithm>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "bench_searcher_journal.hpp"
#include "bench_searcher_latency.hpp"
#include "dlx/config/parse.hpp"
#include "dlx/searcher/method.hpp"
#include "simulated_runner.hpp"

namespace {

using namespace dlx;

// ASHA's settings as the bench runs it (promotion variant): dlx's defaults (config/experiment.hpp,
// Determined's), what a user who does not tune them gets; with max_length 256 the rungs are at
// lengths 1, 4, 16, 64, 256. --asha replaces them (docs/benchmarks.md compares a few).
const std::string kDefaultAsha = "divisor: 4, max_rungs: 5";

struct Options {
  int trials = 2048;
  int workers = 8;
  int seeds = 25;
  int latency_trials = 10'000;
  std::int64_t max_length = 256;  // rungs 1, 4, 16, 64, 256 with divisor 4 and 5 rungs
  double target_percent = 0;      // the target: a configuration in this best share of the space;
                                  // 0: 1000 / trials, about ten qualifying configurations tried
  std::string asha = kDefaultAsha;  // ASHA's settings (--asha "divisor: 3, max_rungs: 3")
  std::string journal_dir;        // where the journaled events run; "": a temporary directory
  int journal_events = 2000;     // 0: skip the journaled measurements
};

Options parse_options(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    auto value = [&] {
      if (i + 1 >= argc) throw std::runtime_error("missing value for " + flag);
      return std::stod(argv[++i]);
    };
    if (flag == "--trials") o.trials = static_cast<int>(value());
    else if (flag == "--workers") o.workers = static_cast<int>(value());
    else if (flag == "--seeds") o.seeds = static_cast<int>(value());
    else if (flag == "--latency-trials") o.latency_trials = static_cast<int>(value());
    else if (flag == "--target-percent") o.target_percent = value();
    else if (flag == "--asha") {
      if (i + 1 >= argc) throw std::runtime_error("missing value for " + flag);
      o.asha = argv[++i];
    } else if (flag == "--journal-dir") {
      if (i + 1 >= argc) throw std::runtime_error("missing value for " + flag);
      o.journal_dir = argv[++i];
    } else if (flag == "--journal-events") o.journal_events = static_cast<int>(value());
    else if (flag == "--smoke") o = Options{32, 4, 2, 1000, 64, 0, o.asha, o.journal_dir, 80};
    else throw std::runtime_error("unknown flag " + flag);
  }
  if (o.target_percent <= 0) o.target_percent = 1000.0 / o.trials;
  return o;
}

config::Experiment experiment(const std::string& searcher, int trials, std::int64_t max_length, std::uint64_t seed) {
  return config::parse_experiment(
      fmt::format("name: bench\nentrypoint: x\nseed: {}\nsearcher: {{{}, metric: loss, max_trials: {}, "
                  "max_length: {{batches: {}}}}}\nhyperparameters:\n"
                  "  x: {{type: double, minval: 0, maxval: 1}}\n  y: {{type: double, minval: 0, maxval: 1}}\n",
                  seed, searcher, trials, max_length),
      "bench.yaml");
}


std::string asha_of(const Options& o) { return "name: async_halving, " + o.asha; }

// The noiseless final loss that the best `percent` of the search space reach (200,000 uniform points).
double top_percent(std::int64_t max_length, double percent) {
  std::mt19937_64 random(12345);
  std::uniform_real_distribution<double> unit(0, 1);
  std::vector<double> losses;
  for (int i = 0; i < 200'000; ++i) {
    nlohmann::ordered_json point{{"x", unit(random)}, {"y", unit(random)}};
    losses.push_back(simulation::synthetic_final_loss(point, max_length));
  }
  const auto rank = static_cast<std::ptrdiff_t>(percent / 100 * static_cast<double>(losses.size()));
  std::nth_element(losses.begin(), losses.begin() + rank, losses.end());
  return losses[static_cast<std::size_t>(rank)];
}

struct Run {
  std::optional<double> time_to_target;
  simulation::SimulationResult result;
};

Run run(const config::Experiment& searched, int workers, std::uint64_t seed, double target) {
  auto method = searcher::make_method(searched);
  simulation::SimulationOptions options;
  options.workers = workers;
  options.tickets = searcher::ticket_count(searched);
  options.seconds_per_length = 10;     // one length unit: 10 s of training; a full trial 43 min
  options.task_start_seconds = 5;      // an array task's start: scheduling, process, MPI
  options.checkpoint_load_seconds = 2;
  options.wait_retry_seconds = 10;
  options.curve = simulation::synthetic_curve(seed, 0.1, searched.searcher.max_length->value);
  Run out;
  out.result = simulation::simulate(*method, options);
  if (!out.result.violations.empty()) throw std::runtime_error("protocol violation: " + out.result.violations.front());
  const auto max_length = searched.searcher.max_length->value;
  out.time_to_target = out.result.first_time(max_length, [&](int trial, const simulation::Validation&) {
    return simulation::synthetic_final_loss(out.result.trials.at(trial).hparams, max_length) <= target;
  });
  return out;
}

double mean(const std::vector<double>& values) {
  double sum = 0;
  for (double value : values) sum += value;
  return sum / static_cast<double>(values.size());
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const auto n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// Time to target, or (not reached) the run's makespan: a search that never gets there costs all of it.
double time_or_end(const Run& r) { return r.time_to_target.value_or(r.result.makespan); }

void result(const char* name, double value, const char* target, bool ok, const std::string& note = "") {
  fmt::print("# result: {} {:.4f} (target {}) {}{}\n", name, value, target, ok ? "PASS" : "MISS", note);
}

void latency_results(const std::string& name, const bench::LatencySummary& latency) {
  fmt::print("# result: {}_p50 {:.3f} (no target; see journaled_event_vs_fdatasync)\n", name, latency.p50_ms);
  fmt::print("# result: {}_p99 {:.3f} (no target)\n", name, latency.p99_ms);
}

// The journaled cost on a real file system, beside the in-memory decisions above.
void journal_costs(const Options& o) {
  namespace fs = std::filesystem;
  const fs::path parent = o.journal_dir.empty() ? fs::temp_directory_path() / "dlx-bench-journal" : fs::path(o.journal_dir);
  fs::create_directories(parent);
  const bool smoke = o.journal_events < 1000;
  // Stopping ASHA with more tickets than any run uses: every question is one appended event.
  const auto searched = experiment(asha_of(o) + ", stop_once: true", 100'000, 256, 11);
  // The reference before and after the journaled runs: this VM's fdatasync latency drifts with
  // the other engineers' load (0.1 ms or 3-4 ms at the median from one minute to the next). 308
  // bytes: the mean record of these runs.
  const auto bare_before = bench::measure_bare_fdatasync(parent, 308, o.journal_events);
  const auto one = bench::measure_journaled_events(searched, parent, o.journal_events, 1, false);
  const auto four = bench::measure_journaled_events(searched, parent, o.journal_events, 4, false);
  const auto one_h5 = bench::measure_journaled_events(searched, parent, o.journal_events, 1, true);
  const auto four_h5 = bench::measure_journaled_events(searched, parent, o.journal_events, 4, true);
  const auto bare_after = bench::measure_bare_fdatasync(parent, 308, o.journal_events);
  const double bare_p50 = (bare_before.p50_ms + bare_after.p50_ms) / 2;
  const int summary_trials = smoke ? 200 : 10'000;
  const auto rewrite = bench::measure_summary_rewrite(experiment(asha_of(o), summary_trials, 256, 7), parent, smoke ? 1 : 5);
  fmt::print("# journaled events in {} ({} events per configuration, {:.0f}-byte records)\n", parent.string(),
             o.journal_events, one.record_bytes);
  fmt::print("# {:>24} {:>9} {:>9} {:>9} {:>9} {:>10}\n", "configuration", "p50_ms", "p99_ms", "mean_ms", "max_ms",
             "events/s");
  const auto row = [](const char* name, const bench::LatencySummary& l, double rate) {
    fmt::print("  {:>24} {:>9.3f} {:>9.3f} {:>9.3f} {:>9.3f} {:>10.0f}\n", name, l.p50_ms, l.p99_ms, l.mean_ms, l.max_ms,
               rate);
  };
  row("bare fdatasync, before", bare_before, 1000 / std::max(bare_before.mean_ms, 1e-9));
  row("1 writer", one.event, one.events_per_second);
  row("4 writers", four.event, four.events_per_second);
  row("1 writer + experiment.h5", one_h5.event, one_h5.events_per_second);
  row("4 writers + experiment.h5", four_h5.event, four_h5.events_per_second);
  row("bare fdatasync, after", bare_after, 1000 / std::max(bare_after.mean_ms, 1e-9));
  fmt::print("# experiment.h5 at {} trials, {} decisions: {:.1f} MiB, one rewrite {:.1f} ms; replaying that "
             "{:.1f} MiB journal in a new process: {:.1f} ms\n",
             rewrite.trials, rewrite.decisions, static_cast<double>(rewrite.bytes) / (1 << 20), rewrite.median_ms,
             static_cast<double>(rewrite.journal_bytes) / (1 << 20), rewrite.replay_ms);
  latency_results("journaled_event_ms", one.event);
  latency_results("journaled_event_4w_ms", four.event);
  latency_results("journaled_event_h5_ms", one_h5.event);
  latency_results("journaled_event_4w_h5_ms", four_h5.event);
  fmt::print("# result: journaled_event_vs_fdatasync {:.2f} (no target; p50 of a journaled event / p50 of a bare "
             "pwrite+fdatasync of 308 bytes in the same directory, {:.3f} ms: the mean of its p50 before and after)\n",
             one.event.p50_ms / std::max(bare_p50, 1e-9), bare_p50);
  const auto suffix = smoke ? fmt::format(" (at {} trials)", rewrite.trials) : std::string();
  fmt::print("# result: experiment_h5_rewrite_ms_10k {:.1f} (no target){}\n", rewrite.median_ms, suffix);
  fmt::print("# result: journal_replay_ms_10k {:.1f} (no target){}\n", rewrite.replay_ms, suffix);
}

}  // namespace

int main(int argc, char** argv) try {
  const auto o = parse_options(argc, argv);
  const double target = top_percent(o.max_length, o.target_percent);
  fmt::print("# bench_searcher: {} trials, {} workers, max_length {}, {} seeds; target final loss <= {:.4f}\n",
             o.trials, o.workers, o.max_length, o.seeds, target);
  fmt::print("# ASHA: {{{}}}\n", asha_of(o));
  fmt::print("# {:>4} {:>10} {:>10} {:>10} {:>10} {:>8} {:>8} {:>8}\n", "seed", "random_s", "asha_s", "asha4x_s",
             "asha_tpe_s", "busy", "busy_all", "train");

  // sampler: tpe where the config knows it; the random sampler otherwise (then the ratio is 1).
  std::string tpe_note;
  auto tpe_experiment = [&](std::uint64_t seed) {
    try {
      return experiment(asha_of(o) + ", sampler: tpe", o.trials, o.max_length, seed);
    } catch (const config::ConfigError& error) {
      tpe_note = " (sampler: tpe not accepted by this config parser; ran the random sampler)";
      return experiment(asha_of(o), o.trials, o.max_length, seed);
    }
  };

  std::vector<double> random_times, asha_times, asha_4x_times, tpe_times, busy, busy_all, training;
  for (int s = 0; s < o.seeds; ++s) {
    const auto seed = static_cast<std::uint64_t>(1000 + s);
    const auto random = run(experiment("name: random", o.trials, o.max_length, seed), o.workers, seed, target);
    const auto asha_experiment = experiment(asha_of(o), o.trials, o.max_length, seed);
    const auto asha = run(asha_experiment, o.workers, seed, target);
    const auto asha_4x = run(asha_experiment, 4 * o.workers, seed, target);
    const auto asha_tpe = run(tpe_experiment(seed), o.workers, seed, target);
    random_times.push_back(time_or_end(random));
    asha_times.push_back(time_or_end(asha));
    asha_4x_times.push_back(time_or_end(asha_4x));
    tpe_times.push_back(time_or_end(asha_tpe));
    // While new trials remain (the search phase; after it only the promoted few train on), and
    // over the whole run.
    busy.push_back(asha.result.occupancy(asha.result.last_fresh_start, true));
    busy_all.push_back(asha.result.occupancy(asha.result.makespan, true));
    training.push_back(asha.result.occupancy(asha.result.last_fresh_start, false));
    fmt::print("  {:>4} {:>10.0f} {:>10.0f} {:>10.0f} {:>10.0f} {:>8.3f} {:>8.3f} {:>8.3f}\n", seed,
               time_or_end(random), time_or_end(asha), time_or_end(asha_4x), time_or_end(asha_tpe), busy.back(),
               asha.result.occupancy(asha.result.makespan, true), asha.result.occupancy(asha.result.makespan, false));
  }

  const auto latency = bench::measure_decision_latency(experiment(asha_of(o), o.latency_trials, o.max_length, 7),
                                                       std::max(64, o.latency_trials / 40));
  fmt::print("# decision latency at {} trials: {} calls, mean {:.2f} us, p99 {:.2f} us, max {:.2f} us\n",
             o.latency_trials, latency.calls, latency.mean_us, latency.p99_us, latency.max_us);

  // Expected times to target (means over the seeds), then their ratios.
  fmt::print("# mean time to target: random {:.0f} s, asha {:.0f} s, asha 4x workers {:.0f} s, asha+tpe {:.0f} s\n",
             mean(random_times), mean(asha_times), mean(asha_4x_times), mean(tpe_times));
  fmt::print("# median time to target: random {:.0f} s, asha {:.0f} s, asha 4x workers {:.0f} s, asha+tpe {:.0f} s\n",
             median(random_times), median(asha_times), median(asha_4x_times), median(tpe_times));
  fmt::print("# asha busy fraction over the whole run (tail included): median {:.3f}\n", median(busy_all));
  fmt::print("# asha training-only fraction while new trials remain (start-ups and loads not counted): median {:.3f}\n",
             median(training));
  const double ratio = mean(asha_times) / mean(random_times), scaling = mean(asha_4x_times) / mean(asha_times),
               tpe = mean(tpe_times) / mean(asha_times), occupancy = median(busy);
  result("asha_vs_random_time_to_target", ratio, "<= 0.25", ratio <= 0.25);
  result("asha_busy_fraction", occupancy, ">= 0.95", occupancy >= 0.95);
  result("asha_4x_workers_time_to_target", scaling, "<= 0.3", scaling <= 0.3);
  result("tpe_vs_random_in_asha", tpe, "< 1", tpe < 1, tpe_note);
  result("decision_latency_us_10k", latency.p99_us, "<= 50", latency.p99_us <= 50,
         o.latency_trials == 10'000 ? "" : fmt::format(" (at {} trials)", o.latency_trials));
  if (o.journal_events > 0) journal_costs(o);
  return 0;
} catch (const std::exception& error) {
  fmt::print(stderr, "bench_searcher: {}\n", error.what());
  return 1;
}
