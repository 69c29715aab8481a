#include "training_loop.hpp"

#include <chrono>
#include <cmath>
#include <random>
#include <vector>

#include "dlx/checkpoint/writer.hpp"

namespace dlx::bench {

TrainingTimes run_training(const TrainingSetup& setup) {
  TrainingTimes times;
  // Sparse-ish synthetic data: each row has 32 active features, label from a hidden model.
  constexpr std::size_t kActive = 32;
  std::mt19937_64 rng(42);
  std::uniform_int_distribution<std::size_t> feature(0, setup.features - 1);
  std::normal_distribution<float> value(0.0f, 1.0f);
  std::vector<std::uint32_t> index(setup.rows * kActive);
  std::vector<float> x(setup.rows * kActive), y(setup.rows);
  for (std::size_t r = 0; r < setup.rows; ++r) {
    float dot = 0;
    for (std::size_t k = 0; k < kActive; ++k) {
      index[r * kActive + k] = static_cast<std::uint32_t>(feature(rng));
      x[r * kActive + k] = value(rng);
      dot += x[r * kActive + k] * ((index[r * kActive + k] % 3 == 0) ? 1.0f : -0.5f);
    }
    y[r] = dot > 0 ? 1.0f : 0.0f;
  }
  std::vector<float> weights(setup.features, 0.0f), momentum(setup.features, 0.0f);
  std::vector<float> gradient(setup.features, 0.0f);
  std::uint64_t rng_state[4] = {1, 2, 3, 4};

  std::optional<checkpoint::CheckpointWriter> writer;
  if (setup.every) {
    checkpoint::WriterOptions options;
    options.directory = setup.directory;
    options.async = setup.async;
    options.retention = checkpoint::RetentionPolicy{1, 0, 0, "", true};
    writer.emplace(options);
  }
  auto start = std::chrono::steady_clock::now();
  std::uniform_int_distribution<std::size_t> pick(0, setup.rows - 1);
  for (std::int64_t step = 1; step <= setup.steps; ++step) {
    // Dense work per step, as a real model's forward/backward: decay the whole gradient buffer.
    for (auto& g : gradient) g *= 0.0f;
    for (std::size_t b = 0; b < setup.batch; ++b) {
      auto r = pick(rng);
      float dot = 0;
      for (std::size_t k = 0; k < kActive; ++k) dot += weights[index[r * kActive + k]] * x[r * kActive + k];
      float error = 1.0f / (1.0f + std::exp(-dot)) - y[r];
      for (std::size_t k = 0; k < kActive; ++k) gradient[index[r * kActive + k]] += error * x[r * kActive + k];
    }
    for (std::size_t i = 0; i < setup.features; ++i) {
      momentum[i] = 0.9f * momentum[i] + gradient[i];
      weights[i] -= 0.05f * momentum[i];
    }
    rng_state[step % 4] += static_cast<std::uint64_t>(step);
    if (writer && step % *setup.every == 0) {
      checkpoint::CheckpointContent content;
      content.metadata.experiment = "bench";
      content.metadata.step = step;
      content.state["data_cursor"] = step * static_cast<std::int64_t>(setup.batch);
      content.tensors.push_back({"model/weights", checkpoint::DType::float32, {setup.features}, weights.data()});
      content.tensors.push_back({"optimizer/momentum", checkpoint::DType::float32, {setup.features}, momentum.data()});
      content.tensors.push_back({"rng/sampler", checkpoint::DType::uint64, {4}, rng_state});
      writer->save(content);
      times.stall_seconds += std::chrono::duration<double>(writer->last_stall()).count();
    }
  }
  if (writer) {
    auto wait_start = std::chrono::steady_clock::now();
    writer->wait();
    times.final_wait_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wait_start).count();
  }
  times.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return times;
}

}  // namespace dlx::bench
