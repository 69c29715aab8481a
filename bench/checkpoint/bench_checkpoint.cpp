// bench_checkpoint: checkpoint I/O against raw POSIX I/O of the same bytes on the same file
// system, in one run (docs/benchmarks.md, section Checkpoint).
//   save_vs_posix_write    save_checkpoint (temp + fsync + rename) / write+fsync   target >= 0.95
//   load_vs_posix_read     load_checkpoint (with CRCs), cold cache / read, cold   target >= 0.9
//                          (both into buffers reused from the previous repeat; a load into
//                          fresh memory is printed too)
//   async_stall_vs_sync    CheckpointWriter async save() stall / sync save time   target <= 0.15
//   training_overhead_pct  a training loop saving every N steps vs never          target <= 3.5
// Reads are made cold with fdatasync + POSIX_FADV_DONTNEED on the file before each read, so they
// come from the device whatever the page cache size. Throughputs are medians of --repeats runs.
// usage: bench_checkpoint [--dir DIR] [--mib N] [--repeats R] [--train-steps S] [--every N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "dlx/checkpoint/writer.hpp"
#include "posix_io.hpp"
#include "training_loop.hpp"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct Options {
  fs::path dir = fs::temp_directory_path() / "dlx-bench-checkpoint";
  std::size_t mib = 1024;
  int repeats = 3;
  std::int64_t train_steps = 300;
  std::int64_t every = 100;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--dir") o.dir = value;
    else if (flag == "--mib") o.mib = std::stoul(value);
    else if (flag == "--repeats") o.repeats = std::stoi(value);
    else if (flag == "--train-steps") o.train_steps = std::stoll(value);
    else if (flag == "--every") o.every = std::stoll(value);
    else throw std::runtime_error("unknown flag " + flag);
  }
  return o;
}

double seconds(const std::function<void()>& f) {
  auto start = Clock::now();
  f();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::vector<fs::path> store_files(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.path().filename().string().starts_with("step-")) out.push_back(entry.path());
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void result(const char* name, double value, const char* target, bool ok) {
  fmt::print("# result: {} {:.4f} (target {}) {}\n", name, value, target, ok ? "PASS" : "MISS");
}

}  // namespace

int main(int argc, char** argv) try {
  using namespace dlx;
  auto o = parse(argc, argv);
  fs::create_directories(o.dir);
  const std::size_t bytes = o.mib << 20;
  // A model-like mix: four large tensors and a few small ones, random contents.
  std::vector<std::vector<float>> data;
  for (std::size_t share : {4, 2, 1, 1}) data.emplace_back(bytes / 8 * share / sizeof(float));
  std::uint32_t seed = 1;
  for (auto& t : data)
    for (auto& v : t) v = static_cast<float>(seed = seed * 1664525u + 1013904223u) * 1e-9f;
  checkpoint::CheckpointContent content;
  content.metadata.experiment = "bench";
  std::vector<std::span<const std::byte>> raw;
  for (std::size_t i = 0; i < data.size(); ++i) {
    content.tensors.push_back({fmt::format("model/layer{}", i), checkpoint::DType::float32,
                               {data[i].size()}, data[i].data()});
    raw.push_back(std::as_bytes(std::span(data[i])));
  }
  std::size_t total = 0;
  for (auto r : raw) total += r.size();
  std::vector<std::byte> read_buffer(total);

  fmt::print("# bench_checkpoint: {} MiB in {} tensors, dir {}, {} repeats, {} cores\n",
             total >> 20, raw.size(), o.dir.string(), o.repeats, std::thread::hardware_concurrency());
  fmt::print("# {:<28} {:>10} {:>10}\n", "operation", "seconds", "MB/s");
  auto row = [&](const char* what, double s) {
    fmt::print("  {:<28} {:>10.3f} {:>10.1f}\n", what, s, static_cast<double>(total) / s / 1e6);
  };
  auto posix_path = o.dir / "posix.bin";
  auto ckpt_path = checkpoint::checkpoint_path(o.dir, 1);
  std::vector<double> w, s, r, l;
  // Loads reuse the buffers of the previous load, as the POSIX reads reuse read_buffer; one load
  // into fresh memory (page faults and zeroing included) is timed separately below.
  checkpoint::Checkpoint loaded;
  for (int i = 0; i < o.repeats; ++i) {
    w.push_back(seconds([&] { bench::posix_write_fsync(posix_path, raw); }));
    row("posix write+fsync", w.back());
    s.push_back(seconds([&] { checkpoint::save_checkpoint(content, ckpt_path); }));
    row("save_checkpoint", s.back());
    bench::drop_from_page_cache(posix_path);
    r.push_back(seconds([&] { bench::posix_read(posix_path, read_buffer); }));
    row("posix read (cold)", r.back());
    if (i == 0) loaded = checkpoint::load_checkpoint(ckpt_path);  // the buffers, faulted in
    bench::drop_from_page_cache(ckpt_path);
    l.push_back(seconds([&] { loaded = checkpoint::load_checkpoint(ckpt_path, {}, std::move(loaded)); }));
    row("load_checkpoint (cold)", l.back());
  }
  loaded = {};
  bench::drop_from_page_cache(ckpt_path);
  double fresh = seconds([&] { (void)checkpoint::load_checkpoint(ckpt_path); });
  row("load, fresh buffers (cold)", fresh);
  double save_ratio = median(w) / median(s), load_ratio = median(r) / median(l);

  // Async: the stall is save()'s return time; the writer's buffers are warm after the first save.
  checkpoint::WriterOptions async_options;
  async_options.directory = o.dir;
  checkpoint::CheckpointWriter writer(async_options);
  std::vector<double> stalls;
  for (int i = 0; i < o.repeats + 1; ++i) {
    content.metadata.step = 10 + i;
    writer.save(content);
    if (i > 0) stalls.push_back(std::chrono::duration<double>(writer.last_stall()).count());
    writer.wait();
  }
  double stall_ratio = median(stalls) / median(s);
  row("async save() stall", median(stalls));

  // Training with and without checkpoints as adjacent pairs, alternating which runs first, so
  // that the shared machine's changing background load hits both runs of a pair alike; the
  // overhead is the median over pairs of each pair's relative difference. At least 5 pairs:
  // single runs of a couple of seconds vary by tens of percent here.
  bench::TrainingSetup setup;
  setup.steps = o.train_steps;
  setup.directory = o.dir / "training";
  fs::create_directories(setup.directory);
  const int pairs = std::max(5, 2 * o.repeats + 1);
  std::vector<double> without, with, overheads, stalls_in_training, final_waits;
  for (int i = 0; i < pairs; ++i) {
    auto run = [&](bool checkpoints) {
      setup.every = checkpoints ? std::optional<std::int64_t>(o.every) : std::nullopt;
      return bench::run_training(setup);
    };
    bench::TrainingTimes plain, saving;
    if (i % 2 == 0) {
      plain = run(false);
      saving = run(true);
    } else {
      saving = run(true);
      plain = run(false);
    }
    without.push_back(plain.seconds);
    with.push_back(saving.seconds);
    overheads.push_back((saving.seconds - plain.seconds) / plain.seconds * 100.0);
    stalls_in_training.push_back(saving.stall_seconds);
    final_waits.push_back(saving.final_wait_seconds);
    fmt::print("  training pair {}: {:.3f} s without checkpoints, {:.3f} s with (save() stalls "
               "{:.3f} s, final wait {:.3f} s): {:+.1f}%\n", i + 1, plain.seconds, saving.seconds,
               saving.stall_seconds, saving.final_wait_seconds, overheads.back());
  }
  double overhead = median(overheads);
  double direct = (median(stalls_in_training) + median(final_waits)) / median(without) * 100.0;
  fmt::print("# training: {} steps, {} MiB of model+optimizer state, checkpoint every {} steps: "
             "medians of {} pairs {:.3f} s with, {:.3f} s without; the training thread waited "
             "{:.3f} s in save() and {:.3f} s for the last save ({:.1f}% of the run)\n",
             setup.steps, setup.features * 8 >> 20, o.every, pairs, median(with), median(without),
             median(stalls_in_training), median(final_waits), direct);

  fmt::print("# load into fresh buffers (cold) over posix read: {:.4f}\n", median(r) / fresh);
  result("save_vs_posix_write", save_ratio, ">= 0.95", save_ratio >= 0.95);
  result("load_vs_posix_read", load_ratio, ">= 0.9", load_ratio >= 0.9);
  result("async_stall_vs_sync", stall_ratio, "<= 0.15", stall_ratio <= 0.15);
  result("training_overhead_pct", overhead, "<= 3.5", overhead <= 3.5);
  // Remove only what this run wrote (the directory may be the user's).
  fs::remove(posix_path);
  for (const auto& entry : store_files(o.dir)) fs::remove(entry);
  fs::remove_all(setup.directory);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_checkpoint: %s\n", e.what());
  return 1;
}
