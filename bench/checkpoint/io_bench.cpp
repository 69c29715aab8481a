// SPDX-License-Identifier: Apache-2.0
#include "io_bench.hpp"

#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "dlx/checkpoint/writer.hpp"
#include "posix_io.hpp"

namespace dlx::bench {
namespace {

namespace fs = std::filesystem;

struct Data {
  std::vector<checkpoint::HostBuffer> tensors;  // page-aligned, as a framework's large tensors
  checkpoint::CheckpointContent content;
  std::vector<std::span<const std::byte>> raw;
  std::size_t total = 0;
};

// A model-like mix: four large tensors, random contents.
Data make_data(std::size_t bytes) {
  Data d;
  for (std::size_t share : {4, 2, 1, 1})
    d.tensors.push_back(checkpoint::HostBuffer::allocate(bytes / 8 * share / sizeof(float) * sizeof(float)));
  std::uint32_t seed = 1;
  for (auto& t : d.tensors) {
    std::span<float> values(reinterpret_cast<float*>(t.data()), t.size() / sizeof(float));
    for (auto& v : values) v = static_cast<float>(seed = seed * 1664525u + 1013904223u) * 1e-9f;
  }
  d.content.metadata.experiment = "bench";
  for (std::size_t i = 0; i < d.tensors.size(); ++i) {
    d.content.tensors.push_back({fmt::format("model/layer{}", i), checkpoint::DType::float32,
                                 {d.tensors[i].size() / sizeof(float)}, d.tensors[i].data()});
    d.raw.push_back({d.tensors[i].data(), d.tensors[i].size()});
    d.total += d.raw.back().size();
  }
  return d;
}

}  // namespace

std::vector<Result> run_io_bench(const IoOptions& o) {
  fs::create_directories(o.dir);
  auto d = make_data(o.mib << 20);
  std::vector<std::byte> read_buffer(d.total);
  fmt::print("# bench_checkpoint I/O: {} MiB in {} tensors, dir {}, {} rounds, {} cores\n",
             d.total >> 20, d.raw.size(), o.dir.string(), o.rounds,
             std::thread::hardware_concurrency());
  auto rate = [&](double s) { return static_cast<double>(d.total) / s / 1e6; };
  const auto posix_path = o.dir / "posix.bin";
  const auto ckpt_path = checkpoint::checkpoint_path(o.dir, 1);

  // Writes: three ways per round (write+fsync; the same through O_DIRECT, as save writes the
  // tensors; save_checkpoint) in rotating order, so that each way runs first, second and
  // third equally often while the disk's speed drifts.
  std::vector<double> w, wb, s, r, l, save_ratios, save_wb_ratios, load_ratios;
  checkpoint::Checkpoint loaded;  // loads reuse the buffers of the previous load
  for (int round = 0; round < o.rounds; ++round) {
    double times[3] = {0, 0, 0};
    for (int k = 0; k < 3; ++k) {
      const int way = (round + k) % 3;
      if (way == 0) times[0] = seconds([&] { posix_write_fsync(posix_path, d.raw); });
      if (way == 1) times[1] = seconds([&] { posix_write_fsync(posix_path, d.raw, true); });
      if (way == 2) times[2] = seconds([&] { checkpoint::save_checkpoint(d.content, ckpt_path); });
    }
    w.push_back(times[0]);
    wb.push_back(times[1]);
    s.push_back(times[2]);
    save_ratios.push_back(times[0] / times[2]);
    save_wb_ratios.push_back(times[1] / times[2]);
    if (round == 0) loaded = checkpoint::load_checkpoint(ckpt_path);  // the buffers, faulted in
    double read = 0, load = 0;
    for (int k = 0; k < 2; ++k) {
      if ((k == 0) == (round % 2 == 0)) {
        drop_from_page_cache(posix_path);
        read = seconds([&] { posix_read(posix_path, read_buffer); });
      } else {
        drop_from_page_cache(ckpt_path);
        load = seconds([&] {
          loaded = checkpoint::load_checkpoint(ckpt_path, {}, std::move(loaded));
        });
      }
    }
    r.push_back(read);
    l.push_back(load);
    load_ratios.push_back(read / load);
    fmt::print("  round {}: write+fsync {:.3f} s, O_DIRECT {:.3f} s, save {:.3f} s "
               "({:.3f}); read {:.3f} s, load {:.3f} s ({:.3f})\n",
               round + 1, times[0], times[1], times[2], save_ratios.back(), read, load,
               load_ratios.back());
  }
  loaded = {};
  drop_from_page_cache(ckpt_path);
  const double fresh = seconds([&] { (void)checkpoint::load_checkpoint(ckpt_path); });

  // Async: save()'s return time with warm snapshot buffers (the first save allocates them), the
  // previous save finished; beside it a plain memcpy of the same bytes into a warm buffer.
  checkpoint::WriterOptions async_options;
  async_options.directory = o.dir;
  checkpoint::CheckpointWriter writer(async_options);
  std::vector<double> stalls, copies;
  for (int i = 0; i < o.rounds + 1; ++i) {
    d.content.metadata.step = 10 + i;
    writer.save(d.content);
    if (i > 0) stalls.push_back(std::chrono::duration<double>(writer.last_stall()).count());
    writer.wait();
    copies.push_back(seconds([&] {
      std::size_t at = 0;
      for (auto part : d.raw) {
        std::memcpy(read_buffer.data() + at, part.data(), part.size());
        at += part.size();
      }
    }));
  }
  copies.erase(copies.begin());

  fmt::print("# {:<44} {:>8} {:>8}\n", "operation (median over rounds)", "seconds", "MB/s");
  auto row = [&](const char* what, double sec) {
    fmt::print("  {:<44} {:>8.3f} {:>8.0f}\n", what, sec, rate(sec));
  };
  row("POSIX write+fsync", median(w));
  row("POSIX write+fsync, O_DIRECT", median(wb));
  row("save_checkpoint", median(s));
  row("POSIX read (cold)", median(r));
  row("load_checkpoint (cold)", median(l));
  row("load_checkpoint (cold), fresh buffers, once", fresh);
  row("async save() stall", median(stalls));
  row("memcpy of the same bytes (warm buffer)", median(copies));
  const double save_ratio = median(save_ratios), load_ratio = median(load_ratios);
  const double stall_ratio = median(stalls) / median(s);
  fmt::print("# save over POSIX O_DIRECT write+fsync, the same I/O (what HDF5 + CRCs cost): {:.4f}\n",
             median(save_wb_ratios));
  fmt::print("# async stall over a plain memcpy of the same bytes: {:.4f}\n",
             median(stalls) / median(copies));
  fmt::print("# load into fresh buffers (cold) over posix read: {:.4f}\n", median(r) / fresh);

  // Remove only what this run wrote (the directory may be the user's).
  fs::remove(posix_path);
  std::vector<fs::path> written;
  for (const auto& entry : fs::directory_iterator(o.dir))
    if (entry.path().filename().string().starts_with("step-")) written.push_back(entry.path());
  for (const auto& path : written) fs::remove(path);
  return {{"save_vs_posix_write", save_ratio, ">= 0.95", save_ratio >= 0.95},
          {"load_vs_posix_read", load_ratio, ">= 0.9", load_ratio >= 0.9},
          {"async_stall_vs_sync", stall_ratio, "<= 0.15", stall_ratio <= 0.15}};
}

}  // namespace dlx::bench
