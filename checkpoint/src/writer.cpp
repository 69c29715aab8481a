// SPDX-License-Identifier: Apache-2.0
#include "dlx/checkpoint/writer.hpp"

#include <utility>

#include <fmt/format.h>

#include "device_copy.hpp"
#include "dlx/checkpoint/error.hpp"
#include "snapshot.hpp"

namespace dlx::checkpoint {

CheckpointWriter::CheckpointWriter(WriterOptions options)
    : options_(std::move(options)), download_(std::make_unique<detail::DeviceDownload>()) {}

CheckpointWriter::~CheckpointWriter() {
  try {
    if (in_flight_.valid()) in_flight_.get();
  } catch (...) {  // the destructor must not throw; wait() reports errors
  }
}

void CheckpointWriter::collect() {
  if (!in_flight_.valid()) return;
  in_flight_.wait();  // the save is over, its snapshot too: a watcher may stop waiting for it
  {
    std::lock_guard lock(snapshot_mutex_);
    snapshot_taken_ = {};
  }
  auto done = in_flight_.get();  // rethrows the background save's CheckpointError
  last_published_ = std::move(done.path);
  spare_ = std::move(done.buffers);
}

void CheckpointWriter::wait() { collect(); }

void CheckpointWriter::wait_for_snapshot() noexcept {
  std::shared_future<void> taken;
  {
    std::lock_guard lock(snapshot_mutex_);
    taken = snapshot_taken_;  // a copy: collect() may reset the member meanwhile
  }
  if (taken.valid()) taken.wait();
}

bool CheckpointWriter::snapshot_pending() const {
  std::lock_guard lock(snapshot_mutex_);
  return snapshot_taken_.valid() &&
         snapshot_taken_.wait_for(std::chrono::seconds(0)) != std::future_status::ready;
}

bool CheckpointWriter::withdraw(const std::filesystem::path& path) {
  try {
    collect();
  } catch (const CheckpointError&) {  // the failed save published nothing
  }
  if (last_published_ != path) return false;
  std::error_code error;
  const bool removed = std::filesystem::remove(path, error);
  if (error)
    throw CheckpointError(fmt::format("cannot delete {}: {}", path.string(), error.message()),
                          error.value());
  last_published_.reset();
  return removed;
}

bool CheckpointWriter::wait_for(std::chrono::steady_clock::duration deadline) {
  if (!in_flight_.valid()) return true;
  if (in_flight_.wait_for(deadline) != std::future_status::ready) return false;
  collect();
  return true;
}

bool CheckpointWriter::busy() const {
  return in_flight_.valid() &&
         in_flight_.wait_for(std::chrono::seconds(0)) != std::future_status::ready;
}

CheckpointWriter::Done CheckpointWriter::write(CheckpointContent content,
                                               std::vector<Tensor> snapshot,
                                               std::filesystem::path path) {
  detail::save_snapshot(content, snapshot, path);
  if (options_.retention) {
    ReferencedSteps referenced;
    if (options_.searcher_references) {
      auto known = options_.searcher_references();
      if (!known) return {std::move(path), std::move(snapshot)};  // delete nothing when unsure
      referenced = std::move(*known);
    }
    if (options_.referenced_steps)
      for (auto step : options_.referenced_steps()) referenced.emplace(step, "");
    apply_retention(options_.directory, *options_.retention,
                    {.experiment = content.metadata.experiment,
                     .trial_id = content.metadata.trial_id},
                    referenced);
  }
  return {std::move(path), std::move(snapshot)};
}

std::filesystem::path CheckpointWriter::save(const CheckpointContent& content) {
  auto path = checkpoint_path(options_.directory, content.metadata.step);
  auto start = std::chrono::steady_clock::now();
  collect();  // a new save waits for the previous one, its snapshot included
  auto after = detail::mark_if_on_device(content.tensors, content.cuda_stream);
  auto snapshot = detail::snapshot_tensors(content.tensors, std::move(spare_), *download_, after);
  spare_.clear();
  CheckpointContent metadata_only{content.metadata, content.state, {}, nullptr};
  if (!options_.async) {
    detail::copy_the_rest(snapshot, *download_, after);
    auto done = write(std::move(metadata_only), std::move(snapshot.tensors), path);
    last_published_ = done.path;
    spare_ = std::move(done.buffers);
    last_stall_ = std::chrono::steady_clock::now() - start;
    return path;
  }
  std::promise<void> taken;
  if (!snapshot.complete()) {
    std::lock_guard lock(snapshot_mutex_);
    snapshot_taken_ = taken.get_future().share();
  }
  in_flight_ = std::async(std::launch::async, [this, c = std::move(metadata_only),
                                               s = std::move(snapshot), a = std::move(after),
                                               t = std::move(taken), path]() mutable {
    if (!s.complete()) {
      // The caller's tensors are read until `t` is set, on every path: its wait_for_snapshot()
      // must not return while a copy still reads them, nor wait for ever after a failure.
      try {
        detail::copy_the_rest(s, *download_, a);
      } catch (...) {
        t.set_value();
        throw;
      }
      t.set_value();
    }
    return write(std::move(c), std::move(s.tensors), path);
  });
  last_stall_ = std::chrono::steady_clock::now() - start;
  return path;
}

}  // namespace dlx::checkpoint
