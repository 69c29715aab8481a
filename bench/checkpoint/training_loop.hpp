#pragma once
// A small self-contained training loop for the overhead measurement: logistic regression with
// mini-batch SGD on synthetic data (the example trainer's math), optionally saving a checkpoint
// of the weights, an optimizer buffer and the RNG state every `every` steps through a
// CheckpointWriter. Returns the wall time of the whole run (the wait for the last save included)
// and where the checkpointing part of it went.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>

namespace dlx::bench {

struct TrainingSetup {
  std::size_t features = 1 << 20;   // model size: features float32 weights + momentum
  std::size_t rows = 4096;          // synthetic samples
  std::size_t batch = 64;
  std::int64_t steps = 200;
  std::optional<std::int64_t> every;  // checkpoint period in steps; nullopt: never
  bool async = true;
  std::filesystem::path directory;
};

struct TrainingTimes {
  double seconds = 0;        // the whole run, the final wait included
  double stall_seconds = 0;  // summed save() stalls (snapshot, and any wait for the previous save)
  double final_wait_seconds = 0;  // waiting for the last save to be durable at the end
};

TrainingTimes run_training(const TrainingSetup& setup);

}  // namespace dlx::bench
