// SPDX-License-Identifier: Apache-2.0
// The GPU series of the system sampler (dlx/launch/gpu_usage.hpp) on a real GPU, with a
// neighbour: a "trainer" process and a second process that is not the trial's share one GPU.
//
//   t0 .. t0+4   the neighbour runs matrix products; the trainer holds 2 GiB and waits
//   t0+4 .. t0+8 the trainer runs matrix products; the neighbour holds 1 GiB and waits
//
// The sampler follows the trainer (period 0.5 s) into trials/0/system/ as dlx-launch does; the
// check reads the log back and asks: device-wide utilisation high in both phases, the trial's own
// SM share low in the first and high in the second, the trial's memory its 2 GiB and not the
// neighbour's, power and clocks read; and the device's utilisation and memory in use against
// what `nvidia-smi --query-gpu` printed meanwhile (every 0.5 s too). It also times GpuUsage::sample on this thread: the
// sampler's cost as a share of one core at the default period of 1 s.
// Prints '# result:' lines; exit 1 when a check fails, 77 without NVML or a GPU.
//   --show TRIAL_DIR   instead: the GPU series a dlx-launch run left in TRIAL_DIR/system (its
//                      mean and largest value each); exit 1 when it has none

#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <cmath>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "dlx/launch/gpu_usage.hpp"
#include "nvml_api.hpp"
#include "dlx/launch/system_sampler.hpp"
#include "dlx/record/system_series.hpp"

namespace {

namespace fs = std::filesystem;
using dlx::launch::GpuUsage;

int failures = 0;
void check(bool ok, const std::string& what) {
  fmt::print("{} {}\n", ok ? "ok  " : "FAIL", what);
  if (!ok) ++failures;
}

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// A Python process on cuda:0 that holds `gib` GiB and runs matrix products from `busy_from` to
// `busy_until` (unix seconds), then waits until `exit_at`.
pid_t start_python(const std::string& python, double gib, double busy_from, double busy_until, double exit_at) {
  const auto script = fmt::format(
      "import time, torch\n"
      "hold = torch.empty(int({} * 2**30), dtype=torch.uint8, device='cuda')\n"
      "a = torch.randn(4096, 4096, device='cuda')\n"
      "torch.cuda.synchronize()\n"
      "while time.time() < {}: time.sleep(0.05)\n"
      "while time.time() < {}:\n"
      "    for _ in range(20): a = torch.tanh(a @ a)\n"
      "    torch.cuda.synchronize()\n"
      "while time.time() < {}: time.sleep(0.05)\n",
      gib, busy_from, busy_until, exit_at);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::execlp(python.c_str(), python.c_str(), "-c", script.c_str(), static_cast<char*>(nullptr));
    std::_Exit(127);
  }
  return pid;
}

struct Window {
  double from, to;
};

// `nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used` every 0.5 s into `file`, its
// clock in UTC; nullopt-like -1 when there is no nvidia-smi.
pid_t start_nvidia_smi(const fs::path& file) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    std::FILE* out = std::freopen(file.c_str(), "w", stdout);
    if (!out) std::_Exit(127);
    ::setenv("TZ", "UTC", 1);
    ::execlp("nvidia-smi", "nvidia-smi", "-i", "0", "--query-gpu=timestamp,utilization.gpu,memory.used",
             "--format=csv,noheader,nounits", "-lms", "500", static_cast<char*>(nullptr));
    std::_Exit(127);
  }
  return pid;
}

struct SmiRow {
  double unix = 0, util = 0, memory_bytes = 0;
};

// "2026/11/29 19:32:22.123, 99, 5498" lines (UTC).
std::vector<SmiRow> read_nvidia_smi(const fs::path& file) {
  std::vector<SmiRow> rows;
  std::FILE* in = std::fopen(file.c_str(), "r");
  if (!in) return rows;
  char line[256];
  while (std::fgets(line, sizeof line, in)) {
    std::tm when{};
    double seconds = 0, util = 0, mib = 0;
    if (std::sscanf(line, "%d/%d/%d %d:%d:%lf, %lf, %lf", &when.tm_year, &when.tm_mon, &when.tm_mday, &when.tm_hour,
                    &when.tm_min, &seconds, &util, &mib) != 8) {
      continue;
    }
    when.tm_year -= 1900;
    when.tm_mon -= 1;
    rows.push_back({static_cast<double>(::timegm(&when)) + seconds, util, mib * 1024 * 1024});
  }
  std::fclose(in);
  return rows;
}

std::optional<double> smi_mean(const std::vector<SmiRow>& rows, double SmiRow::*field, Window window) {
  double sum = 0;
  int count = 0;
  for (const auto& row : rows) {
    if (row.unix >= window.from && row.unix <= window.to) {
      sum += row.*field;
      ++count;
    }
  }
  if (count == 0) return std::nullopt;
  return sum / count;
}

// The mean of `name` over the samples taken inside `window`; nullopt without any.
std::optional<double> mean_in(const dlx::record::SystemSeries& series, const std::string& name, Window window) {
  const auto values = series.samples.series(name);
  double sum = 0;
  int count = 0;
  for (std::size_t i = 0; i < values.values.size(); ++i) {
    if (values.wall_times[i] >= window.from && values.wall_times[i] <= window.to) {
      sum += values.values[i];
      ++count;
    }
  }
  if (count == 0) return std::nullopt;
  return sum / count;
}

double max_of(const dlx::record::SystemSeries& series, const std::string& name) {
  double most = 0;
  for (const double value : series.samples.series(name).values) most = std::max(most, value);
  return most;
}

double thread_cpu_ms() {
  timespec now{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) * 1e3 + static_cast<double>(now.tv_nsec) / 1e6;
}

// What each NVML call the sampler makes costs on this machine, CPU and wall (information: where
// the sampler's cost goes).
void print_call_costs() {
  std::string why;
  const auto api = dlx::launch::nvml::load(why);
  namespace nvml = dlx::launch::nvml;
  nvml::Device device = nullptr;
  if (!api || api->handle_by_index(0, &device) != nvml::kSuccess) return;
  const auto time = [&](const char* name, auto&& call) {
    constexpr int kCalls = 10;
    const double cpu = thread_cpu_ms();
    const auto wall = std::chrono::steady_clock::now();
    for (int i = 0; i < kCalls; ++i) call();
    fmt::print("cost of {:<28} cpu {:7.3f} ms  wall {:7.3f} ms\n", name, (thread_cpu_ms() - cpu) / kCalls,
               std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - wall).count() / kCalls);
  };
  time("memory", [&] { nvml::Memory m{}; api->memory(device, &m); });
  time("compute processes", [&] {
    unsigned n = 16;
    nvml::ProcessInfo infos[16];
    if (api->processes) api->processes(device, &n, infos);
  });
  time("utilisation samples: count", [&] {
    nvml::ValueType type{};
    unsigned n = 0;
    if (api->samples) api->samples(device, nvml::kGpuUtilizationSamples, 0, &type, &n, nullptr);
  });
  time("process utilisation: count", [&] {
    unsigned n = 0;
    if (api->process_utilization) api->process_utilization(device, nullptr, &n, 0);
  });
  time("utilisation samples", [&] {
    nvml::ValueType type{};
    unsigned n = 0;
    if (api->samples) api->samples(device, nvml::kGpuUtilizationSamples, 0, &type, &n, nullptr);
    std::vector<nvml::Sample> samples(n + 8);
    n = static_cast<unsigned>(samples.size());
    if (api->samples) api->samples(device, nvml::kGpuUtilizationSamples, 0, &type, &n, samples.data());
  });
  time("process utilisation", [&] {
    unsigned n = 0;
    if (api->process_utilization) api->process_utilization(device, nullptr, &n, 0);
    std::vector<nvml::ProcessUtilization> samples(n + 8);
    n = static_cast<unsigned>(samples.size());
    if (api->process_utilization) api->process_utilization(device, samples.data(), &n, 0);
  });
  time("power", [&] { unsigned mw = 0; if (api->power_mw) api->power_mw(device, &mw); });
  time("SM clock", [&] { unsigned mhz = 0; if (api->clock_mhz) api->clock_mhz(device, nvml::kClockSm, &mhz); });
  time("PCIe throughput (one way)", [&] { unsigned kb = 0; if (api->pcie_kbps) api->pcie_kbps(device, nvml::kPcieRxBytes, &kb); });
}

// The GPU series of a run of dlx-launch (scripts/gpu-check.sh, its ddp step).
int show(const fs::path& trial_dir) {
  int gpu_series = 0;
  for (const auto& series : dlx::record::load_system_series(trial_dir)) {
    fmt::print("{} rank {} attempt {}: {} samples\n", series.name.node, series.name.rank, series.name.attempt,
               series.samples.rows());
    for (const auto& name : series.samples.names()) {
      if (!name.starts_with("gpu")) continue;
      ++gpu_series;
      const auto values = series.samples.series(name).values;
      double sum = 0;
      for (const double value : values) sum += value;
      fmt::print("  {:<28} mean {:>14.1f}  max {:>14.1f}  ({} samples)\n", name,
                 values.empty() ? 0 : sum / static_cast<double>(values.size()), max_of(series, name), values.size());
    }
  }
  check(gpu_series > 0, "dlx-launch's run has GPU series");
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string python = "python3";
  fs::path dir = fs::temp_directory_path() / fmt::format("dlx-gpu-metrics-{}", ::getpid());
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--python") python = argv[i + 1];
    else if (flag == "--dir") dir = argv[i + 1];
    else if (flag == "--show") return show(argv[i + 1]);
  }
  std::string why;
  const char* visible_text = std::getenv("CUDA_VISIBLE_DEVICES");
  const std::vector<std::string> visible = visible_text && *visible_text ? std::vector<std::string>{"0"}
                                                                         : std::vector<std::string>{};
  if (!GpuUsage::open(visible, why)) {
    fmt::print("SKIP: {}\n", why);
    return 77;
  }
  fs::remove_all(dir);
  fs::create_directories(dir / "trials" / "0");

  const double t0 = unix_now() + 15;  // both processes have their CUDA context by then
  const pid_t smi = start_nvidia_smi(dir / "nvidia-smi.csv");
  const pid_t neighbour = start_python(python, 1, t0, t0 + 4, t0 + 9);
  const pid_t trainer = start_python(python, 2, t0 + 4, t0 + 8, t0 + 8.5);
  // Not naming the device: the sampler finds it by the trainer's context, as on a node where
  // nothing names the GPUs.
  auto sampler = dlx::launch::SystemSampler::start(trainer, std::chrono::milliseconds(500), dir / "trials" / "0",
                                                   {"gpu-node", 0, 0, 0}, stderr, {{}, true});
  check(sampler != nullptr, "the sampler started");

  // The sampler's cost on this thread, while the trainer runs (second phase).
  while (unix_now() < t0 + 5) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  auto probe = GpuUsage::open({}, why);
  std::vector<dlx::launch::GpuSample> last;
  timespec cpu_start{}, cpu_end{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu_start);
  const auto wall_start = std::chrono::steady_clock::now();
  constexpr int kCalls = 20;
  for (int i = 0; i < kCalls; ++i) last = probe->sample({trainer});
  const double wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - wall_start).count() / kCalls;
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu_end);
  const double cpu_ms = (static_cast<double>(cpu_end.tv_sec - cpu_start.tv_sec) * 1e3 +
                         static_cast<double>(cpu_end.tv_nsec - cpu_start.tv_nsec) / 1e6) / kCalls;
  probe.reset();

  int status = 0;
  ::waitpid(trainer, &status, 0);
  check(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the trainer ran");
  sampler.reset();
  ::waitpid(neighbour, &status, 0);
  check(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the neighbour ran");
  if (smi > 0) {
    ::kill(smi, SIGTERM);
    ::waitpid(smi, &status, 0);
  }

  const auto all = dlx::record::load_system_series(dir / "trials" / "0");
  check(all.size() == 1, fmt::format("one system log ({})", all.size()));
  if (all.empty()) return 1;
  const auto& series = all.front();
  fmt::print("series: {}\n", fmt::join(series.samples.names(), ", "));
  const Window neighbour_busy{t0 + 1, t0 + 3.8}, trainer_busy{t0 + 5, t0 + 7.8};
  const auto util_a = mean_in(series, "gpu0_util_percent", neighbour_busy);
  const auto util_b = mean_in(series, "gpu0_util_percent", trainer_busy);
  const auto sm_a = mean_in(series, "gpu0_trial_sm_percent", neighbour_busy);
  const auto sm_b = mean_in(series, "gpu0_trial_sm_percent", trainer_busy);
  const double memory = max_of(series, "gpu0_memory_bytes");
  const double device_memory = max_of(series, "gpu0_device_memory_bytes");
  fmt::print("neighbour busy: device {:.1f}%, trial SM {:.1f}%; trainer busy: device {:.1f}%, trial SM {:.1f}%\n",
             util_a.value_or(-1), sm_a.value_or(-1), util_b.value_or(-1), sm_b.value_or(-1));
  check(util_a && *util_a > 50, "device-wide utilisation high while the neighbour runs");
  check(util_b && *util_b > 50, "device-wide utilisation high while the trainer runs");
  if (sm_a || sm_b) {
    check(sm_a && *sm_a < 15, "the trial's SM share low while only the neighbour runs");
    check(sm_b && *sm_b > 50, "the trial's SM share high while it runs");
  } else {
    fmt::print("NOTE: no per-process utilisation on this driver: gpu0_trial_sm_percent absent\n");
  }
  const double gib = 1024.0 * 1024 * 1024;
  fmt::print("trial memory {:.2f} GiB, device memory in use {:.2f} GiB, min/max util range seen {:.0f}-{:.0f}%\n",
             memory / gib, device_memory / gib, max_of(series, "gpu0_util_min_percent"),
             max_of(series, "gpu0_util_max_percent"));
  check(memory >= 2 * gib && memory < 2 * gib + 0.9 * gib, "the trial's GPU memory: its 2 GiB and a context, not the neighbour's 1 GiB");
  check(device_memory >= memory + gib, "the device's memory in use counts the neighbour too");
  // Against nvidia-smi over the same windows: the same device-wide figures, read by another tool.
  const auto smi_rows = read_nvidia_smi(dir / "nvidia-smi.csv");
  if (smi_rows.size() >= 10) {
    for (const auto& [name, window] : {std::pair{"neighbour busy", neighbour_busy}, std::pair{"trainer busy", trainer_busy}}) {
      const auto ours_util = mean_in(series, "gpu0_util_percent", window);
      const auto ours_memory = mean_in(series, "gpu0_device_memory_bytes", window);
      const auto theirs_util = smi_mean(smi_rows, &SmiRow::util, window);
      const auto theirs_memory = smi_mean(smi_rows, &SmiRow::memory_bytes, window);
      check(ours_util && theirs_util && ours_memory && theirs_memory, fmt::format("{}: both tools read", name));
      if (!ours_util || !theirs_util || !ours_memory || !theirs_memory) continue;
      fmt::print("{}: utilisation {:.1f}% (nvidia-smi {:.1f}%), memory in use {:.2f} GiB (nvidia-smi {:.2f} GiB)\n",
                 name, *ours_util, *theirs_util, *ours_memory / gib, *theirs_memory / gib);
      check(std::abs(*ours_util - *theirs_util) <= 10, fmt::format("{}: utilisation within 10 points of nvidia-smi's", name));
      check(std::abs(*ours_memory - *theirs_memory) <= 0.05 * *theirs_memory + 256.0 * 1024 * 1024,
            fmt::format("{}: memory in use within 5% of nvidia-smi's", name));
    }
  } else {
    fmt::print("NOTE: no nvidia-smi readings ({} lines): not compared\n", smi_rows.size());
  }
  check(max_of(series, "gpu0_power_watts") > 0, "power read");
  check(max_of(series, "gpu0_sm_clock_mhz") > 0, "SM clock read");
  check(max_of(series, "gpu0_memory_total_bytes") > 0, "the device's memory size read");
  check(!last.empty(), "GpuUsage::sample found the trainer's GPU by its process");
  fmt::print("# result: gpu_sample_ms {:.3f} (wall per sample of one GPU; information)\n", wall_ms);
  fmt::print("# result: gpu_sample_core_percent {:.4f} (CPU per sample at a 1 s period, % of one core; target <= 0.5)\n",
             cpu_ms / 10);
  check(cpu_ms / 10 <= 0.5, "the GPU sampling costs at most 0.5% of one core at 1 s");
  print_call_costs();
  fs::remove_all(dir);
  return failures == 0 ? 0 : 1;
}
