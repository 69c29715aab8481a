// SPDX-License-Identifier: Apache-2.0
// bench_data_stage: staging throughput (dlx::data::StagedData::stage into a fresh cache) against
// `cp -r` of the same directory, measured side by side in the same run, alternating which goes
// first. The source is written by the benchmark, so both read it from a warm page cache (said in
// the output) unless --cold is given: then (as root) the page cache is dropped before each timed
// side, so each reads the source from the disk as a node's first trial would; staging ends with a syncfs (the cache's durability), so cp -r is timed both bare and
// followed by `sync -f` on its copy, the same guarantee. The headline ratio (medians) is against cp -r + sync.
//   bench_data_stage [--dir DIR] [--mib N] [--repeats N] [--cold]
// Results: docs/benchmarks.md, section "Data staging".
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "dlx/common/bounded_command.hpp"
#include "dlx/data/stage.hpp"

namespace fs = std::filesystem;

namespace {

struct Options {
  fs::path dir = fs::temp_directory_path();
  std::uint64_t mib = 1024;
  int repeats = 3;
  bool cold = false;
};

[[noreturn]] void usage(const std::string& problem) {
  fmt::print(stderr, "bench_data_stage: {}\nusage: bench_data_stage [--dir DIR] [--mib N] [--repeats N] [--cold]\n", problem);
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--cold") {
      options.cold = true;
      continue;
    }
    if (i + 1 >= argc) usage(fmt::format("{} needs a value", flag));
    const std::string value = argv[++i];
    try {
      if (flag == "--dir") {
        options.dir = value;
      } else if (flag == "--mib") {
        options.mib = std::stoull(value);
      } else if (flag == "--repeats") {
        options.repeats = std::stoi(value);
      } else {
        usage(fmt::format("unknown option {}", flag));
      }
    } catch (const std::logic_error&) {
      usage(fmt::format("{} '{}' is not a number", flag, value));
    }
  }
  if (options.mib == 0 || options.repeats < 1) usage("--mib and --repeats must be at least 1");
  return options;
}

// Mixed sizes: half the bytes in 32 MiB files, 30% in 1 MiB files, 20% in 32 KiB files.
struct Shape {
  std::size_t count;
  std::size_t bytes;
};

std::uint64_t write_dataset(const fs::path& root, std::uint64_t mib) {
  const std::uint64_t total = mib << 20;
  const std::vector<Shape> shapes = {{std::max<std::size_t>(1, total / 2 / (32 << 20)), std::size_t{32} << 20},
                                     {std::max<std::size_t>(1, total * 3 / 10 / (1 << 20)), std::size_t{1} << 20},
                                     {std::max<std::size_t>(1, total / 5 / (32 << 10)), std::size_t{32} << 10}};
  std::mt19937_64 random(42);
  std::vector<std::uint64_t> block((std::size_t{1} << 20) / 8);
  std::uint64_t written = 0;
  int shape_index = 0;
  for (const auto& shape : shapes) {
    for (std::size_t i = 0; i < shape.count; ++i) {
      const fs::path path = root / fmt::format("s{}/d{:03}/f{:05}.bin", shape_index, i % 100, i);
      fs::create_directories(path.parent_path());
      std::ofstream out(path, std::ios::binary);
      for (std::size_t left = shape.bytes; left > 0;) {
        for (auto& word : block) word = random();
        const std::size_t n = std::min(left, block.size() * 8);
        out.write(reinterpret_cast<const char*>(block.data()), static_cast<std::streamsize>(n));
        left -= n;
      }
      written += shape.bytes;
    }
    ++shape_index;
  }
  return written;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Runs a helper (cp, sync, rm) to completion; exits the benchmark when it fails.
double run_timed(const std::vector<std::string>& argv) {
  dlx::CommandLimits limits;
  limits.timeout = std::chrono::minutes(30);  // a loaded machine's writeback can take minutes
  const auto start = std::chrono::steady_clock::now();
  dlx::CommandResult result;
  try {
    result = dlx::run_bounded(argv, limits);
  } catch (const dlx::CommandError& e) {
    fmt::print(stderr, "bench_data_stage: {}\n", e.what());
    std::exit(1);
  }
  const double seconds = seconds_since(start);
  if (result.exit_code != 0) {
    fmt::print(stderr, "bench_data_stage: {} failed: {}\n", argv.front(), result.err);
    std::exit(1);
  }
  return seconds;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t middle = values.size() / 2;
  return values.size() % 2 == 1 ? values[middle] : (values[middle - 1] + values[middle]) / 2;
}

void clean(const fs::path& path) {
  run_timed({"rm", "-rf", path.string()});
  run_timed({"sync", "-f", path.parent_path().string()});
}

// --cold: writes back, then drops the clean page cache (and dentries, inodes), so the next reader
// finds the source on the disk. Needs root; the benchmark stops with the reason otherwise.
void drop_page_cache() {
  run_timed({"sync"});
  std::ofstream drop("/proc/sys/vm/drop_caches");
  drop << "3\n";
  drop.flush();
  if (!drop) {
    fmt::print(stderr, "bench_data_stage: --cold cannot write /proc/sys/vm/drop_caches (run it as root)\n");
    std::exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse(argc, argv);
  const fs::path work = options.dir / fmt::format("dlx-bench-data-{}", ::getpid());
  fs::create_directories(work / "local");
  const fs::path source = work / "source";
  const std::uint64_t bytes = write_dataset(source, options.mib);
  std::size_t files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(source)) files += entry.is_regular_file() ? 1 : 0;
  run_timed({"sync", "-f", source.string()});
  fmt::print("# bench_data_stage: {:.1f} MiB in {} files (32 MiB, 1 MiB and 32 KiB) under {}\n",
             static_cast<double>(bytes) / (1 << 20), files, work.string());
  fmt::print("# page cache: {}\n", options.cold ? "dropped before each timed side (--cold)"
                                               : "warm for both (the source was just written; nothing is dropped)");
  fmt::print("# staging ends with syncfs; 'cp+sync' is cp -r followed by sync -f on its copy\n");
  fmt::print("# {:>6}  {:>10}  {:>10}  {:>10}  {:>10}  {:>10}\n", "repeat", "stage_s", "cp_s", "cp+sync_s",
             "stage_MB/s", "cp+sync_MB/s");
  std::vector<double> stages, cps, cp_syncs;
  for (int repeat = 0; repeat < options.repeats; ++repeat) {
    const fs::path copy = work / "cp-copy";
    const fs::path root = work / "local" / std::to_string(repeat);
    fs::create_directories(root);
    double stage_s = 0, cp_s = 0, cp_sync_s = 0;
    auto time_stage = [&] {
      if (options.cold) drop_page_cache();
      dlx::data::StageRequest request;
      request.sources = {source};
      request.local_root = root;
      request.policy.high_watermark = 1.0;
      const auto start = std::chrono::steady_clock::now();
      auto staged = dlx::data::StagedData::stage(request, nullptr);
      stage_s = seconds_since(start);
      if (staged.datasets().front().reused || staged.datasets().front().bytes != bytes) {
        fmt::print(stderr, "bench_data_stage: the staged copy is not a fresh copy of the source\n");
        std::exit(1);
      }
    };
    auto time_cp = [&] {
      if (options.cold) drop_page_cache();
      cp_s = run_timed({"cp", "-r", source.string(), copy.string()});
      clean(copy);
      if (options.cold) drop_page_cache();
      const auto start = std::chrono::steady_clock::now();
      run_timed({"cp", "-r", source.string(), copy.string()});
      run_timed({"sync", "-f", copy.string()});
      cp_sync_s = seconds_since(start);
      clean(copy);
    };
    if (repeat % 2 == 0) {
      time_stage();
      time_cp();
    } else {
      time_cp();
      time_stage();
    }
    clean(root);
    stages.push_back(stage_s);
    cps.push_back(cp_s);
    cp_syncs.push_back(cp_sync_s);
    fmt::print("  {:>6}  {:>10.3f}  {:>10.3f}  {:>10.3f}  {:>10.0f}  {:>12.0f}\n", repeat, stage_s, cp_s, cp_sync_s,
               static_cast<double>(bytes) / 1e6 / stage_s, static_cast<double>(bytes) / 1e6 / cp_sync_s);
  }
  clean(work);
  // Throughput ratio = time ratio (same bytes); medians of the repeats: on a shared machine the
  // writeback of a neighbour's data lands in any one run, so a best-of would flatter either side.
  const double stage = median(stages), cp = median(cps), cp_sync = median(cp_syncs);
  fmt::print("# median of {}: stage {:.3f} s, cp -r {:.3f} s, cp -r + sync {:.3f} s\n", stages.size(), stage, cp,
             cp_sync);
  fmt::print("# result: data_stage_vs_bare_cp {:.2f}\n", cp / stage);
  fmt::print("# result: data_stage_vs_cp {:.2f} (target >= 0.9)\n", cp_sync / stage);
  return 0;
}
