// SPDX-License-Identifier: Apache-2.0
#include "dlx/checkpoint/writer.hpp"

#include <utility>

#include "snapshot.hpp"

namespace dlx::checkpoint {

CheckpointWriter::CheckpointWriter(WriterOptions options) : options_(std::move(options)) {}

CheckpointWriter::~CheckpointWriter() {
  try {
    if (in_flight_.valid()) in_flight_.get();
  } catch (...) {  // the destructor must not throw; wait() reports errors
  }
}

void CheckpointWriter::collect() {
  if (!in_flight_.valid()) return;
  auto done = in_flight_.get();  // rethrows the background save's CheckpointError
  last_published_ = std::move(done.path);
  spare_ = std::move(done.buffers);
}

void CheckpointWriter::wait() { collect(); }

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
  collect();  // a new save waits for the previous one
  auto snapshot = detail::snapshot_tensors(content.tensors, std::move(spare_));
  spare_.clear();
  CheckpointContent metadata_only{content.metadata, content.state, {}};
  if (!options_.async) {
    auto done = write(std::move(metadata_only), std::move(snapshot), path);
    last_published_ = done.path;
    spare_ = std::move(done.buffers);
    last_stall_ = std::chrono::steady_clock::now() - start;
    return path;
  }
  in_flight_ = std::async(std::launch::async, [this, c = std::move(metadata_only),
                                               s = std::move(snapshot), path]() mutable {
    return write(std::move(c), std::move(s), path);
  });
  last_stall_ = std::chrono::steady_clock::now() - start;
  return path;
}

}  // namespace dlx::checkpoint
