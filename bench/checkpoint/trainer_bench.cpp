// SPDX-License-Identifier: Apache-2.0
#include "trainer_bench.hpp"

#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "dlx/trial.hpp"

namespace dlx::bench {

Result run_training_bench(const TrainingOptions& o) {
  namespace fs = std::filesystem;
  const auto directory = o.dir / "training";
  fs::create_directories(directory);
  // Outside a dlx trial libdlx saves into DLX_CHECKPOINT_DIR, async, keeping every file.
  ::setenv("DLX_CHECKPOINT_DIR", directory.c_str(), 1);
  TrialOptions options;
  options.announce_backend = false;
  options.checkpoint_signals = {};
  Trial trial(options);
  TrainerRun trainer(trial, o.setup);
  const auto& s = o.setup;
  fmt::print("# bench_checkpoint training: the example trainer, {} features, batch {}, {:.1f} MiB "
             "per checkpoint, runs of {} steps saving every {} steps, {} pairs\n",
             s.features, s.batch, static_cast<double>(trainer.state_bytes()) / (1 << 20),
             o.steps, s.every, o.pairs);

  // Warm-up (the first save allocates the writer's snapshot buffers, which later saves reuse),
  // then the profile CheckFreq's rule needs: the step time, one save's stall and the time its
  // background write takes.
  (void)trainer.run(true);
  const double step = trainer.run(false).seconds / static_cast<double>(o.steps);
  const auto profile = trainer.profile_save();
  const double bound = 0.035;
  const auto rule = static_cast<long long>(std::ceil(
      std::max(profile.final_wait_seconds / step, profile.stall_seconds / (bound * step))));
  fmt::print("# profile: step {:.2f} ms, save_checkpoint stall {:.1f} ms, background write "
             "{:.0f} ms; CheckFreq's rule (a period >= one background write, the stall <= 3.5% "
             "of it): N >= {}\n",
             step * 1e3, profile.stall_seconds * 1e3, profile.final_wait_seconds * 1e3, rule);

  std::vector<double> with, without, overheads, stalls, waits;
  for (int i = 0; i < o.pairs; ++i) {
    TrainerTimes a, b;
    if (i % 2 == 0) {
      b = trainer.run(false);
      a = trainer.run(true);
    } else {
      a = trainer.run(true);
      b = trainer.run(false);
    }
    with.push_back(a.seconds);
    without.push_back(b.seconds);
    overheads.push_back((a.seconds - b.seconds) / b.seconds * 100.0);
    stalls.push_back(a.stall_seconds);
    waits.push_back(a.final_wait_seconds);
    fmt::print("  pair {}: {:.3f} s without checkpoints, {:.3f} s with (in save_checkpoint "
               "{:.3f} s, final wait {:.3f} s): {:+.1f}%\n",
               i + 1, b.seconds, a.seconds, a.stall_seconds, a.final_wait_seconds,
               overheads.back());
  }
  const double overhead = median(overheads);
  std::vector<double> own;
  for (std::size_t i = 0; i < with.size(); ++i) own.push_back((stalls[i] + waits[i]) / with[i] * 100);
  fmt::print("# training: medians of {} pairs {:.3f} s with, {:.3f} s without ({:+.2f}%); the "
             "training thread spent {:.3f} s in save_checkpoint and {:.3f} s in the final wait: "
             "{:.2f}% of the run\n",
             o.pairs, median(with), median(without), overhead, median(stalls), median(waits),
             median(own));
  fs::remove_all(directory);
  return {"training_overhead_pct", overhead, "<= 3.5", overhead <= 3.5};
}

}  // namespace dlx::bench
