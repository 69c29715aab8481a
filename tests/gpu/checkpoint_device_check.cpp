// SPDX-License-Identifier: Apache-2.0
// dlx-gpu-checkpoint-check: checkpoints of CUDA device memory on a real GPU.
//   dlx-gpu-checkpoint-check [--mib N] [--repeats R] [--dir DIR]
// A model of 16 device tensors (N MiB in all, default 1024, random bytes) is saved with
// dlx::checkpoint::CheckpointWriter, as a C++ trainer saves its parameters in place on the GPU.
//   d2h_snapshot_vs_pinned_memcpy  the time of cudaMemcpyAsync of every tensor into pinned host
//                                  memory (one stream, then synchronise: the hardware's rate) over
//                                  the time an async save() blocks the training thread, which is
//                                  that snapshot (target >= 0.9)
//   async_stall_vs_sync_save       that blocked time over a synchronous save of the same tensors
//                                  (information: the share of a save the trainer waits for)
//   background snapshot            the same save with every tensor snapshot_in_background: the
//                                  device memory overwritten once wait_for_snapshot() returned,
//                                  the file holds the originals (a check), and how long save()
//                                  and the copy took (background_save_returned_vs_copy,
//                                  background_copy_vs_pinned_memcpy: information)
//   resume bit-exact               the file loaded and copied back onto the device holds exactly
//                                  the original bytes, tensor by tensor (a check: ok/FAIL)
//   load into device memory        the same, read by the library straight into device memory
//                                  (Deferral::place_on_device; a check), and
//   device_load_vs_host_load_and_copy  a load into host memory plus a copy of each tensor to the
//                                  device over that load (information)
// Medians over R warm saves (the first save allocates the pinned snapshot buffers: not counted).
// Prints '# result:' lines; exit 1 when a check fails or a target is missed, 77 with no GPU.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "dlx/checkpoint/checkpoint.hpp"
#include "dlx/checkpoint/writer.hpp"

namespace {

namespace fs = std::filesystem;
namespace ck = dlx::checkpoint;
using Clock = std::chrono::steady_clock;

#define CHECK_CUDA(call)                                                               \
  do {                                                                                 \
    if (cudaError_t e = (call); e != cudaSuccess)                                      \
      throw std::runtime_error(fmt::format("{}: {}", #call, cudaGetErrorString(e)));   \
  } while (0)

constexpr int kTensors = 16;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// Deterministic random bytes (xorshift64*), so a wrong byte anywhere shows.
void fill_random(std::vector<std::byte>& bytes, std::uint64_t seed) {
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ULL + 1;
  for (std::size_t i = 0; i + 8 <= bytes.size(); i += 8) {
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    const std::uint64_t v = x * 0x2545F4914F6CDD1DULL;
    std::memcpy(bytes.data() + i, &v, 8);
  }
}

struct DeviceModel {
  std::vector<void*> device;
  std::vector<std::vector<std::byte>> original;
  std::size_t tensor_bytes;

  explicit DeviceModel(std::size_t total_bytes) : tensor_bytes(total_bytes / kTensors / 8 * 8) {
    for (int i = 0; i < kTensors; ++i) {
      original.emplace_back(tensor_bytes);
      fill_random(original.back(), static_cast<std::uint64_t>(i) + 1);
      void* pointer = nullptr;
      CHECK_CUDA(cudaMalloc(&pointer, tensor_bytes));
      CHECK_CUDA(cudaMemcpy(pointer, original.back().data(), tensor_bytes,
                            cudaMemcpyHostToDevice));
      device.push_back(pointer);
    }
  }
  ~DeviceModel() {
    for (void* pointer : device) cudaFree(pointer);
  }
  ck::CheckpointContent content(std::int64_t step) const {
    ck::CheckpointContent c;
    c.metadata.experiment = "gpu-check";
    c.metadata.step = step;
    for (int i = 0; i < kTensors; ++i)
      c.tensors.push_back({fmt::format("model/layer{:02}/weight", i), ck::DType::float32,
                           {tensor_bytes / 4}, device[static_cast<std::size_t>(i)],
                           ck::MemoryLocation::cuda_device});
    return c;
  }
};

// The hardware's rate: every tensor into pinned memory on one stream, then synchronise.
double pinned_memcpy_seconds(const DeviceModel& model, std::byte* pinned) {
  cudaStream_t stream = nullptr;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const auto start = Clock::now();
  for (int i = 0; i < kTensors; ++i)
    CHECK_CUDA(cudaMemcpyAsync(pinned + static_cast<std::size_t>(i) * model.tensor_bytes,
                               model.device[static_cast<std::size_t>(i)], model.tensor_bytes,
                               cudaMemcpyDeviceToHost, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  const double seconds = seconds_since(start);
  cudaStreamDestroy(stream);
  return seconds;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t mib = 1024;
  int repeats = 5;
  fs::path dir = fs::temp_directory_path() / "dlx-gpu-checkpoint-check";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--mib") mib = std::stoul(argv[i + 1]);
    else if (flag == "--repeats") repeats = std::max(1, std::stoi(argv[i + 1]));
    else if (flag == "--dir") dir = argv[i + 1];
    else {
      std::fprintf(stderr, "usage: dlx-gpu-checkpoint-check [--mib N] [--repeats R] [--dir DIR]\n");
      return 2;
    }
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices < 1) {
    std::printf("skip: no GPU visible (this check runs on a GPU machine: scripts/gpu-check.sh)\n");
    return 77;
  }
  int failures = 0;
  try {
    fs::remove_all(dir);
    fs::create_directories(dir / "async");
    fs::create_directories(dir / "sync");
    DeviceModel model(mib << 20);
    const std::size_t total = model.tensor_bytes * kTensors;
    void* pinned_raw = nullptr;
    CHECK_CUDA(cudaHostAlloc(&pinned_raw, total, cudaHostAllocDefault));
    auto* pinned = static_cast<std::byte*>(pinned_raw);
    std::memset(pinned, 0, total);  // fault the pages in, as the writer's reused buffers are

    ck::WriterOptions async_options;
    async_options.directory = dir / "async";
    async_options.retention = ck::RetentionPolicy{};
    async_options.retention->keep_latest = 1;
    ck::CheckpointWriter async_writer(async_options);
    ck::WriterOptions sync_options = async_options;
    sync_options.directory = dir / "sync";
    sync_options.async = false;
    ck::CheckpointWriter sync_writer(sync_options);

    std::vector<double> stalls, memcpys, syncs;
    for (int round = 0; round <= repeats; ++round) {
      const double memcpy_s = pinned_memcpy_seconds(model, pinned);
      CHECK_CUDA(cudaDeviceSynchronize());
      async_writer.save(model.content(round + 1));
      const double stall_s =
          std::chrono::duration<double>(async_writer.last_stall()).count();
      async_writer.wait();  // the write itself, off the training thread: not timed
      const auto sync_start = Clock::now();
      sync_writer.save(model.content(round + 1));
      const double sync_s = seconds_since(sync_start);
      std::printf("  round %d%s: pinned memcpy %.4f s, async save blocked %.4f s, sync save "
                  "%.3f s\n", round, round == 0 ? " (warm-up)" : "", memcpy_s, stall_s, sync_s);
      if (round == 0) continue;
      stalls.push_back(stall_s);
      memcpys.push_back(memcpy_s);
      syncs.push_back(sync_s);
    }

    // Resume: the newest file, loaded and put back on the device, byte for byte.
    const auto path = *async_writer.last_published();
    ck::Expectation expect;
    expect.experiment = "gpu-check";
    const ck::Checkpoint loaded = ck::load_checkpoint(path, expect);
    std::vector<std::byte> back(model.tensor_bytes);
    bool exact = loaded.tensors.size() == kTensors;
    void* restored = nullptr;
    CHECK_CUDA(cudaMalloc(&restored, model.tensor_bytes));
    for (int i = 0; i < kTensors && exact; ++i) {
      const auto& tensor = loaded.tensor(fmt::format("model/layer{:02}/weight", i));
      exact = tensor.bytes.size() == model.tensor_bytes;
      if (!exact) break;
      CHECK_CUDA(cudaMemcpy(restored, tensor.bytes.data(), model.tensor_bytes,
                            cudaMemcpyHostToDevice));
      CHECK_CUDA(cudaMemcpy(back.data(), restored, model.tensor_bytes, cudaMemcpyDeviceToHost));
      exact = std::memcmp(back.data(), model.original[static_cast<std::size_t>(i)].data(),
                          model.tensor_bytes) == 0;
    }
    cudaFree(restored);
    cudaFreeHost(pinned_raw);
    std::printf("%s resume onto the device: %d tensors, %zu MiB, bit-exact\n",
                exact ? "ok  " : "FAIL", kTensors, total >> 20);
    if (!exact) ++failures;

    // The file read straight into device memory (Deferral::place_on_device: new device tensors,
    // one read of the file through the library's few pinned pieces), byte for byte, and timed
    // against a load into host memory followed by a copy of each tensor to the device.
    std::vector<void*> placed(kTensors, nullptr);
    for (auto& buffer : placed) CHECK_CUDA(cudaMalloc(&buffer, model.tensor_bytes));
    ck::Deferral onto_device;
    onto_device.place_on_device = [&](const ck::TensorInfo& info) -> void* {
      int index = -1;
      if (std::sscanf(info.name.c_str(), "model/layer%d/weight", &index) != 1 || index < 0 ||
          index >= kTensors || info.bytes != model.tensor_bytes) {
        return nullptr;
      }
      return placed[static_cast<std::size_t>(index)];
    };
    std::vector<double> device_loads, host_loads;
    std::size_t on_device_count = 0;
    for (int round = 0; round < 3; ++round) {
      auto start = Clock::now();
      on_device_count = ck::load_checkpoint(path, expect, onto_device).on_device.size();
      device_loads.push_back(seconds_since(start));
      start = Clock::now();
      {
        const ck::Checkpoint on_host = ck::load_checkpoint(path, expect);
        for (int i = 0; i < kTensors; ++i) {
          const auto& tensor = on_host.tensor(fmt::format("model/layer{:02}/weight", i));
          CHECK_CUDA(cudaMemcpy(placed[static_cast<std::size_t>(i)], tensor.bytes.data(),
                                model.tensor_bytes, cudaMemcpyHostToDevice));
        }
      }
      host_loads.push_back(seconds_since(start));
    }
    CHECK_CUDA(cudaMemset(placed[0], 0, model.tensor_bytes));  // so that the last load shows
    bool device_exact = ck::load_checkpoint(path, expect, onto_device).on_device.size() == kTensors &&
                        on_device_count == kTensors;
    for (int i = 0; i < kTensors && device_exact; ++i) {
      CHECK_CUDA(cudaMemcpy(back.data(), placed[static_cast<std::size_t>(i)], model.tensor_bytes,
                            cudaMemcpyDeviceToHost));
      device_exact = std::memcmp(back.data(), model.original[static_cast<std::size_t>(i)].data(),
                                 model.tensor_bytes) == 0;
    }
    for (void* buffer : placed) cudaFree(buffer);
    std::printf("%s load into device memory: %d tensors, %zu MiB, bit-exact; median of 3: %.3f s, "
                "against %.3f s for a load into host memory and a copy of each tensor\n",
                device_exact ? "ok  " : "FAIL", kTensors, total >> 20, median(device_loads),
                median(host_loads));
    std::printf("# result: device_load_vs_host_load_and_copy %.3f (information)\n",
                median(host_loads) / median(device_loads));
    if (!device_exact) ++failures;

    // The same save with every tensor marked snapshot_in_background, as dlx.torch marks an
    // optimizer's: save() returns once the copy is queued, the writer's thread copies through its
    // pinned pieces, and after wait_for_snapshot() the device memory is the trainer's again (here
    // it is overwritten at once, as the next update would): the file must hold the original.
    std::vector<double> returned, copied;
    bool background_exact = true;
    for (int round = 0; round <= repeats; ++round) {
      auto content = model.content(100 + round);
      for (auto& tensor : content.tensors) tensor.snapshot_in_background = true;
      CHECK_CUDA(cudaDeviceSynchronize());
      const auto start = Clock::now();
      const auto saved = async_writer.save(content);
      const double returned_s = seconds_since(start);
      async_writer.wait_for_snapshot();
      const double copied_s = seconds_since(start);
      for (void* pointer : model.device) CHECK_CUDA(cudaMemset(pointer, 0xff, model.tensor_bytes));
      CHECK_CUDA(cudaDeviceSynchronize());
      async_writer.wait();
      const ck::Checkpoint written = ck::load_checkpoint(saved, expect);
      for (int i = 0; i < kTensors; ++i) {
        const auto& tensor = written.tensor(fmt::format("model/layer{:02}/weight", i));
        background_exact = background_exact && tensor.bytes.size() == model.tensor_bytes &&
                           std::memcmp(tensor.bytes.data(),
                                       model.original[static_cast<std::size_t>(i)].data(),
                                       model.tensor_bytes) == 0;
      }
      for (int i = 0; i < kTensors; ++i)  // the model as it was, for the checks below
        CHECK_CUDA(cudaMemcpy(model.device[static_cast<std::size_t>(i)],
                              model.original[static_cast<std::size_t>(i)].data(),
                              model.tensor_bytes, cudaMemcpyHostToDevice));
      std::printf("  background round %d%s: save() returned after %.5f s, the copy was done "
                  "after %.4f s\n", round, round == 0 ? " (warm-up)" : "", returned_s, copied_s);
      if (round == 0) continue;
      returned.push_back(returned_s);
      copied.push_back(copied_s);
    }
    std::printf("%s background snapshot: %d device tensors, %zu MiB, overwritten on the device "
                "once wait_for_snapshot() returned; the files hold the originals, bit-exact\n",
                background_exact ? "ok  " : "FAIL", kTensors, total >> 20);
    if (!background_exact) ++failures;
    std::printf("# result: background_save_returned_vs_copy %.4f (information: save() %.5f s, "
                "the copy %.4f s)\n", median(returned) / median(copied), median(returned),
                median(copied));
    std::printf("# result: background_copy_vs_pinned_memcpy %.3f (information: through %s of "
                "pinned pieces into pageable memory)\n", median(memcpys) / median(copied),
                "at most 64 MiB");

    const double stall = median(stalls), copy = median(memcpys), sync = median(syncs);
    const double gigabytes = static_cast<double>(total) / 1e9;
    const double ratio = copy / stall;
    std::printf("# %zu MiB in %d device tensors; medians of %d warm rounds: pinned memcpy %.4f s "
                "(%.1f GB/s), async save blocked %.4f s (%.1f GB/s), sync save %.3f s\n",
                total >> 20, kTensors, repeats, copy, gigabytes / copy, stall, gigabytes / stall,
                sync);
    std::printf("# result: d2h_snapshot_vs_pinned_memcpy %.3f (target >= 0.9: %s)\n", ratio,
                ratio >= 0.9 ? "met" : "MISSED");
    std::printf("# result: async_stall_vs_sync_save %.3f (information)\n", stall / sync);
    if (ratio < 0.9) ++failures;
    fs::remove_all(dir);
  } catch (const std::exception& error) {
    std::printf("FAIL exception: %s\n", error.what());
    ++failures;
  }
  std::printf("%s\n", failures == 0 ? "PASS" : "FAIL");
  return failures == 0 ? 0 : 1;
}
