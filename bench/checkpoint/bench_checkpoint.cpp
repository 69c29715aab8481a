// SPDX-License-Identifier: Apache-2.0
// bench_checkpoint: checkpoint I/O against raw POSIX I/O of the same bytes on the same file
// system, in one run, and the cost of checkpointing in the example trainer (docs/benchmarks.md,
// section Checkpoint). `bench_checkpoint --help` says what is measured and how.
#include <cstdio>
#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include "io_bench.hpp"
#include "trainer_bench.hpp"

namespace {

constexpr const char* kHelp = R"(usage: bench_checkpoint [--dir DIR] [--mib N] [--repeats R]
                        [--train-pairs P] [--every N] [--train-steps S] [--extra-mb M]
                        [--features F] [--batch B] [--skip-io] [--skip-training]

Results (one run, one file system; every write fsynced):
  save_vs_posix_write    POSIX write+fsync time / save_checkpoint time       target >= 0.95
                         (temp file, fsync, rename, directory fsync, CRC-32C of every byte)
  load_vs_posix_read     POSIX read time / load_checkpoint time, both cold   target >= 0.9
                         (every tensor CRC verified before the load returns)
  async_stall_vs_sync    CheckpointWriter async save() stall / sync save     target <= 0.15
  training_overhead_pct  the example trainer checkpointing every N steps     target <= 3.5
                         against the same run without checkpoints

I/O: --mib MiB (default 1024) of float32 in 4 page-aligned tensors, in DIR (default
$TMPDIR/dlx-bench-checkpoint; use a directory on the file system to measure). R rounds (default
7); each round writes the bytes three ways in rotating order (POSIX write+fsync; the same bytes
through O_DIRECT pwrites + fsync, which is how save_checkpoint writes tensor bytes; and
save_checkpoint), then reads them cold in alternating order (fdatasync + POSIX_FADV_DONTNEED
first; loads reuse the previous load's buffers as the POSIX read reuses its buffer). A ratio is
the median over rounds of each round's ratio: the disk of a shared machine changes speed from
one second to the next, and a round's operations run back to back. The async stall is the
median of R saves into warm buffers; a plain memcpy of the same bytes is printed beside it.

Training: the example trainer's own step and checkpoint path (examples/logreg: train_step,
training_state, Trial::save_checkpoint through libdlx's async writer) on its synthetic data,
with F features (default 4096; weights F float64), batch B (default 256) and M MiB of extra
trainer state (default 64, the stand-in for optimizer state), so a checkpoint holds M MiB +
8 (F + rows) bytes. A run is S steps (default 400) in periods of N steps (default 200), saving
before the first step of each period and waiting for the last save at the end: S/N periods of
the steady state. P pairs (default 15) of runs with and without checkpoints, alternating which
runs first; training_overhead_pct is the median of the pairs' relative differences. Printed
beside it: the training thread's own time in save_checkpoint and in the final wait, as a share
of the run (stable where the machine's load is not), and the smallest N CheckFreq's rule allows.

Why these defaults: CheckFreq (Mohan et al., FAST'21) checkpoints as often as the cost stays
amortised: a period at least as long as one background write (so a save never waits for the
previous one) and long enough that the snapshot stall is a small share of it (their bound,
3.5%, is this target). 64 MiB of state against a step of several milliseconds is the proportion
of a real run, where a checkpoint is worth one to a few hundred steps of writing; N = 200 is what
the rule gives on this trainer on the loaded 2-core VM (a stall of ~45 ms, steps of ~8 ms: N >=
~175), a save every ~1.6 s of training, far more often than the usual every-epoch checkpoint. The bench prints
the rule's N from its own profile; pass --every to follow it on another machine.
)";

}  // namespace

int main(int argc, char** argv) try {
  using namespace dlx::bench;
  IoOptions io;
  TrainingOptions training;
  bool skip_io = false, skip_training = false;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::fputs(kHelp, stdout);
      return 0;
    }
    if (flag == "--skip-io") { skip_io = true; continue; }
    if (flag == "--skip-training") { skip_training = true; continue; }
    if (i + 1 >= argc) throw std::runtime_error(flag + " needs a value (see --help)");
    std::string value = argv[++i];
    if (flag == "--dir") io.dir = training.dir = value;
    else if (flag == "--mib") io.mib = std::stoul(value);
    else if (flag == "--repeats") io.rounds = std::stoi(value);
    else if (flag == "--train-pairs") training.pairs = std::stoi(value);
    else if (flag == "--every") training.setup.every = std::stoll(value);
    else if (flag == "--train-steps") training.steps = std::stoll(value);
    else if (flag == "--extra-mb") training.setup.extra_state_mb = std::stoll(value);
    else if (flag == "--features") training.setup.features = std::stoll(value);
    else if (flag == "--batch") training.setup.batch = std::stoi(value);
    else throw std::runtime_error("unknown flag " + flag + " (see --help)");
  }
  if (io.rounds < 1 || training.pairs < 1 || training.setup.every < 1 ||
      training.steps < training.setup.every || training.steps % training.setup.every != 0)
    throw std::runtime_error(
        "need --repeats >= 1, --train-pairs >= 1 and --train-steps a multiple of --every");
  training.setup.periods = training.steps / training.setup.every;
  std::vector<Result> results;
  if (!skip_io) results = run_io_bench(io);
  if (!skip_training) results.push_back(run_training_bench(training));
  for (const auto& r : results)
    fmt::print("# result: {} {:.4f} (target {}) {}\n", r.name, r.value, r.target,
               r.pass ? "PASS" : "MISS");
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_checkpoint: %s\n", e.what());
  return 1;
}
