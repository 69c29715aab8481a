// SPDX-License-Identifier: Apache-2.0
// bench_allreduce: dlx's allreduce against raw MPI, under `mpirun -n 2 bench_allreduce [--json]`.
//   fused_vs_separate_<size>  100 float tensors of <size> each: 100 MPI_Allreduce calls over
//                             one FusedAllreduce::allreduce_sum (speed-up; targets 4.5 / 2.2 / 1.0)
//   large_vs_raw_mpi_64MiB    one 64 MiB float buffer: raw MPI_Allreduce time over
//                             MpiCommunicator::allreduce_sum time (relative speed; target 0.95)
//   overlap_vs_serial         a simulated backward pass of 12 layers x 2 MiB of gradients whose
//                             per-layer compute runs on an accelerator (the host thread sleeps,
//                             as it waits for a GPU kernel): add()-as-ready + synchronize() step
//                             time over compute-all-then-allreduce (target <= 0.75). The compute
//                             is calibrated to the measured allreduce time of the gradients (a
//                             balanced step: backward compute = communication), 4 MiB buckets.
//   overlap_vs_serial_cpu     the same with the compute on the host CPU (information only: with
//                             one core per rank, computation and communication share it)
//   fused_shm_vs_mpi_16KiB    the 16 KiB case's fused call with buckets through MPI_Allreduce
//                             (DLX_FUSION_SHM=0) over through shared memory (information; only
//                             when the shared-memory path is on, i.e. all ranks on one node)
// `bench_allreduce --sweep` instead measures, per tensor size from 256 KiB to 64 MiB, the fusion
// buckets' shared-memory path against MPI_Allreduce in place (the data behind the choice of which
// tensors go through shared memory; fused_allreduce.hpp): one tensor alone, and a list of tensors
// of that size adding up to 32 MiB (`--sweep <MiB>`: with a window of that many MiB per rank
// instead of the default). Information only, nothing to meet.
// Each figure is the median over repetitions of the slowest rank's time; every repetition starts
// after a barrier. Output follows nccl-tests: '#' metadata, fixed columns, '# result:' lines, a
// verdict; exit 1 when a target is missed. --json prints the results as one JSON object instead.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "dlx/common/host_name.hpp"
#include "dlx/comm/fused_allreduce.hpp"
#include "dlx/comm/mpi_communicator.hpp"
#include "dlx/comm/mpi_runtime.hpp"

namespace {

using dlx::host_name;
using dlx::comm::FusedAllreduce;
using dlx::comm::MpiCommunicator;
using dlx::comm::Tensor;
using Clock = std::chrono::steady_clock;

// Median over `repetitions` of the slowest rank's seconds for one call of `body`.
double median_seconds(MPI_Comm comm, int repetitions, const std::function<void()>& body) {
  body();  // warm-up: buffers, connections
  std::vector<double> times;
  for (int i = 0; i < repetitions; ++i) {
    MPI_Barrier(comm);
    const auto start = Clock::now();
    body();
    double mine = std::chrono::duration<double>(Clock::now() - start).count(), slowest = 0;
    MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, comm);
    times.push_back(slowest);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

// The same for two bodies measured side by side: repetition i runs both, in alternating order,
// so that a change in the machine's load (this is a shared VM) falls on both alike.
std::pair<double, double> paired_median_seconds(MPI_Comm comm, int repetitions,
                                                const std::function<void()>& first,
                                                const std::function<void()>& second) {
  first();
  second();
  std::vector<double> first_times, second_times;
  auto time_one = [&](const std::function<void()>& body) {
    MPI_Barrier(comm);
    const auto start = Clock::now();
    body();
    double mine = std::chrono::duration<double>(Clock::now() - start).count(), slowest = 0;
    MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, comm);
    return slowest;
  };
  for (int i = 0; i < repetitions; ++i) {
    if (i % 2 == 0) {
      first_times.push_back(time_one(first));
      second_times.push_back(time_one(second));
    } else {
      second_times.push_back(time_one(second));
      first_times.push_back(time_one(first));
    }
  }
  std::sort(first_times.begin(), first_times.end());
  std::sort(second_times.begin(), second_times.end());
  return {first_times[first_times.size() / 2], second_times[second_times.size() / 2]};
}

struct Result {
  std::string name;
  double baseline_s;  // the denominator's time
  double dlx_s;
  double value;
  double target;
  bool at_least;  // value >= target (else value <= target)
  bool informational = false;
  bool met() const { return informational || (at_least ? value >= target : value <= target); }
};

std::vector<std::vector<float>> tensors_of(std::size_t count, std::size_t bytes, int rank) {
  return std::vector<std::vector<float>>(count,
                                         std::vector<float>(bytes / sizeof(float), float(rank)));
}

Result fused_vs_separate(MpiCommunicator& comm, MPI_Comm raw, std::size_t bytes,
                         const std::string& label) {
  auto data = tensors_of(100, bytes, comm.rank());
  std::vector<Tensor> list;
  for (auto& d : data) list.push_back(Tensor::of(std::span<float>(d)));
  FusedAllreduce fused(comm);
  const int reps = bytes >= (256 << 10) ? 30 : 200;
  const auto [separate, together] = paired_median_seconds(
      raw, reps,
      [&] {
        for (auto& d : data) {
          MPI_Allreduce(MPI_IN_PLACE, d.data(), static_cast<int>(d.size()), MPI_FLOAT, MPI_SUM, raw);
        }
      },
      [&] { fused.allreduce_sum(list); });
  return {"fused_vs_separate_" + label, separate, together, separate / together,
          label == "1KiB" ? 4.5 : label == "16KiB" ? 2.2 : 1.0, true};
}

// The fusion path alone: the same fused call with buckets packed for MPI_Allreduce and through
// the shared-memory window, interleaved.
Result shm_vs_mpi(MpiCommunicator& comm, MPI_Comm raw) {
  constexpr std::size_t kBytes = 16 << 10;
  auto data = tensors_of(100, kBytes, comm.rank());
  std::vector<Tensor> list;
  for (auto& d : data) list.push_back(Tensor::of(std::span<float>(d)));
  MpiCommunicator packed(MPI_COMM_WORLD, dlx::comm::MpiOptions{.shared_memory_fusion = false});
  FusedAllreduce through_mpi(packed);
  FusedAllreduce through_shm(comm);
  const auto [mpi_s, shm_s] = paired_median_seconds(
      raw, 200, [&] { through_mpi.allreduce_sum(list); }, [&] { through_shm.allreduce_sum(list); });
  Result result{"fused_shm_vs_mpi_16KiB", mpi_s, shm_s, mpi_s / shm_s, 0, true};
  result.informational = true;
  return result;
}

Result large_vs_raw(MpiCommunicator& comm, MPI_Comm raw) {
  std::vector<float> buffer((std::size_t{64} << 20) / sizeof(float), float(comm.rank()));
  const auto [raw_s, dlx_s] = paired_median_seconds(
      raw, 15,
      [&] {
        MPI_Allreduce(MPI_IN_PLACE, buffer.data(), static_cast<int>(buffer.size()), MPI_FLOAT, MPI_SUM,
                      raw);
      },
      [&] { comm.allreduce_sum(std::span<float>(buffer)); });
  return {"large_vs_raw_mpi_64MiB", raw_s, dlx_s, raw_s / dlx_s, 0.95, true};
}

// One layer's backward: either device time (sleep) or host arithmetic of about the same length.
void compute(bool on_host, std::chrono::microseconds duration, std::vector<float>& scratch) {
  if (!on_host) {
    std::this_thread::sleep_for(duration);
    return;
  }
  const auto end = Clock::now() + duration;
  while (Clock::now() < end) {
    for (auto& x : scratch) x = x * 0.999F + 0.001F;
  }
}

Result overlap_vs_serial(MpiCommunicator& comm, MPI_Comm raw, bool on_host) {
  constexpr int kLayers = 12;
  constexpr std::size_t kLayerBytes = std::size_t{2} << 20;
  constexpr std::size_t kBucketBytes = std::size_t{4} << 20;
  auto grads = tensors_of(kLayers, kLayerBytes, comm.rank());
  std::vector<Tensor> list;
  for (auto& g : grads) list.push_back(Tensor::of(std::span<float>(g)));
  std::vector<float> scratch(4096, 1.0F);
  FusedAllreduce fused(comm, kBucketBytes);
  // Calibration: the whole backward computes as long as its gradients take to reduce.
  const double communication = median_seconds(raw, 10, [&] { fused.allreduce_sum(list); });
  double per_layer_s = communication / kLayers;
  MPI_Bcast(&per_layer_s, 1, MPI_DOUBLE, 0, raw);
  const auto per_layer = std::chrono::microseconds(static_cast<long>(per_layer_s * 1e6));
  const auto [serial, overlapped] = paired_median_seconds(
      raw, 20,
      [&] {
        for (int layer = kLayers - 1; layer >= 0; --layer) compute(on_host, per_layer, scratch);
        fused.allreduce_sum(list);
      },
      [&] {
        for (int layer = kLayers - 1; layer >= 0; --layer) {
          compute(on_host, per_layer, scratch);
          fused.add(list[static_cast<std::size_t>(layer)]);
        }
        fused.synchronize();
      });
  Result result{on_host ? "overlap_vs_serial_cpu" : "overlap_vs_serial", serial, overlapped,
                overlapped / serial, 0.75, false};
  result.informational = on_host;
  return result;
}

// One size of the sweep: MPI_Allreduce in place per tensor over the same tensors as one bucket
// through the shared-memory window (whatever FusedAllreduce would choose for them).
void sweep_one(MpiCommunicator& comm, MPI_Comm raw, std::size_t bytes, std::size_t tensors) {
  auto data = tensors_of(tensors, bytes, comm.rank());
  std::vector<Tensor> list;
  for (auto& d : data) list.push_back(Tensor::of(std::span<float>(d)));
  const int reps = bytes * tensors >= (std::size_t{16} << 20) ? 15 : 41;
  const auto [mpi_s, shm_s] = paired_median_seconds(
      raw, reps,
      [&] {
        for (auto& d : data) {
          MPI_Allreduce(MPI_IN_PLACE, d.data(), static_cast<int>(d.size()), MPI_FLOAT, MPI_SUM, raw);
        }
      },
      [&] { comm.allreduce_sum_bucket(list); });
  if (comm.rank() == 0) {
    fmt::print("  {:>8} KiB x {:>3} {:>14.1f} {:>14.1f} {:>8.3f}\n", bytes >> 10, tensors,
               mpi_s * 1e6, shm_s * 1e6, mpi_s / shm_s);
  }
}

int sweep(MPI_Comm raw, std::size_t segment_bytes) {
  MpiCommunicator comm(MPI_COMM_WORLD, dlx::comm::MpiOptions{.shared_memory_bytes = segment_bytes});
  if (!comm.sums_buckets()) {
    if (comm.rank() == 0) fmt::print("# no shared-memory path here (ranks on several nodes?)\n");
    return 1;
  }
  if (comm.rank() == 0) {
    fmt::print("# sweep: {} ranks, shared-memory pieces of {} KiB\n", comm.size(),
               comm.shared_memory_piece_bytes() >> 10);
    fmt::print("# {:>18} {:>14} {:>14} {:>8}\n", "tensors", "mpi(us)", "shm(us)", "mpi/shm");
  }
  for (std::size_t bytes : {std::size_t{256} << 10, std::size_t{1} << 20, std::size_t{4} << 20,
                            std::size_t{8} << 20, std::size_t{16} << 20, std::size_t{64} << 20}) {
    sweep_one(comm, raw, bytes, 1);
    constexpr std::size_t kListBytes = std::size_t{32} << 20;
    if (bytes < kListBytes) sweep_one(comm, raw, bytes, kListBytes / bytes);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const bool json = argc > 1 && std::strcmp(argv[1], "--json") == 0;
  const bool sweeping = argc > 1 && std::strcmp(argv[1], "--sweep") == 0;
  dlx::comm::MpiRuntime mpi;
  MPI_Comm raw = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &raw);
  if (sweeping) {
    const std::size_t segment_mib = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 0;
    const int status = sweep(raw, segment_mib > 0 ? segment_mib << 20
                                                  : dlx::comm::kDefaultFusionShmBytes);
    MPI_Comm_free(&raw);
    return status;
  }
  std::vector<Result> results;
  bool overlaps = false;
  std::size_t shm_piece = 0;
  {
    MpiCommunicator comm(MPI_COMM_WORLD);  // DLX_FUSION_SHM=0 turns the shared-memory path off
    overlaps = comm.overlaps();
    shm_piece = comm.shared_memory_piece_bytes();
    results.push_back(fused_vs_separate(comm, raw, 1 << 10, "1KiB"));
    results.push_back(fused_vs_separate(comm, raw, 16 << 10, "16KiB"));
    results.push_back(fused_vs_separate(comm, raw, 256 << 10, "256KiB"));
    results.push_back(large_vs_raw(comm, raw));
    results.push_back(overlap_vs_serial(comm, raw, false));
    results.push_back(overlap_vs_serial(comm, raw, true));
    if (comm.sums_buckets()) results.push_back(shm_vs_mpi(comm, raw));
  }
  MPI_Comm_free(&raw);
  bool all_met = true;
  for (const auto& r : results) all_met = all_met && r.met();
  if (mpi.rank() == 0) {
    std::time_t now = std::time(nullptr);
    char date[64];
    std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
    if (json) {
      nlohmann::json out{{"ranks", mpi.size()}, {"host", host_name()}, {"date", date},
                         {"fusion_shm_piece_bytes", shm_piece},
                         {"passed", all_met}, {"results", nlohmann::json::array()}};
      for (const auto& r : results) {
        out["results"].push_back({{"name", r.name}, {"value", r.value}, {"target", r.target},
                                  {"at_least", r.at_least}, {"informational", r.informational},
                                  {"baseline_s", r.baseline_s}, {"dlx_s", r.dlx_s},
                                  {"met", r.met()}});
      }
      std::printf("%s\n", out.dump(2).c_str());
    } else {
      fmt::print("# bench_allreduce: {} ranks on {}, {}, MPI_THREAD_MULTIPLE: {}\n", mpi.size(),
                 host_name(), date, overlaps ? "yes" : "no");
      fmt::print("# fusion buckets: {}\n",
                 shm_piece > 0 ? fmt::format("through shared memory ({} KiB pieces)", shm_piece >> 10)
                               : std::string("packed for MPI_Allreduce"));
      fmt::print("# {:<26} {:>14} {:>14} {:>8} {:>10}\n", "name", "baseline(us)", "dlx(us)",
                 "value", "target");
      for (const auto& r : results) {
        fmt::print("  {:<26} {:>14.1f} {:>14.1f} {:>8.3f} {:>10}\n", r.name, r.baseline_s * 1e6,
                   r.dlx_s * 1e6, r.value,
                   r.informational ? "-" : fmt::format("{}{}", r.at_least ? ">=" : "<=", r.target));
      }
      for (const auto& r : results) {
        fmt::print("# result: {} {:.3f} ({}){}\n", r.name, r.value,
                   r.informational ? "information"
                                   : fmt::format("target {}{}", r.at_least ? ">=" : "<=", r.target),
                   r.informational ? "" : (r.met() ? " ok" : " MISSED"));
      }
      fmt::print("# verdict: {}\n", all_met ? "all targets met" : "some targets missed");
    }
  }
  return all_met ? 0 : 1;
}
