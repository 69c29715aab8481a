// SPDX-License-Identifier: Apache-2.0
#include "model_cuda.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

namespace dlx::examples {

namespace {

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    throw std::runtime_error(std::string("dlx-example-logreg: ") + what + ": " + cudaGetErrorString(status));
  }
}

template <class T>
T* device_alloc(std::size_t count) {
  void* pointer = nullptr;
  check(cudaMalloc(&pointer, std::max<std::size_t>(count, 1) * sizeof(T)), "cudaMalloc");
  return static_cast<T*>(pointer);
}

__device__ double logit(const double* weights, double bias, const double* x, long long d) {
  double z = bias;
  for (long long j = 0; j < d; ++j) z += weights[j] * x[j];
  return z;
}

__device__ double loss_from_logit(double z, double label) {
  return fmax(z, 0.0) - z * label + log1p(exp(-fabs(z)));
}

// One thread per batch row: the logit's error (sigmoid(z) - label) and the row's loss.
__global__ void row_terms(const double* x, const double* y, const long long* rows, long long count,
                          const double* weights, double bias, long long d, double* error,
                          double* loss) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i >= count) return;
  const long long row = rows[i];
  const double z = logit(weights, bias, x + row * d, d);
  error[i] = 1.0 / (1.0 + exp(-z)) - y[row];
  loss[i] = loss_from_logit(z, y[row]);
}

// One thread per output: columns 0..d-1 the weight gradients, d the bias, d+1 the loss; each sums
// the batch rows in order, so the result does not depend on scheduling.
__global__ void column_sums(const double* x, const long long* rows, long long count, long long d,
                            const double* error, const double* loss, double* out) {
  const long long j = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (j > d + 1) return;
  double sum = 0;
  for (long long i = 0; i < count; ++i) {
    if (j < d) {
      sum += error[i] * x[rows[i] * d + j];
    } else if (j == d) {
      sum += error[i];
    } else {
      sum += loss[i];
    }
  }
  out[j] = sum;
}

// One thread per row: loss and correctness of the whole shard; then summed in order by thread 0
// of evaluate_sums.
__global__ void evaluate_rows(const double* x, const double* y, long long count, const double* weights,
                              double bias, long long d, double* loss, double* correct) {
  const long long row = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (row >= count) return;
  const double z = logit(weights, bias, x + row * d, d);
  loss[row] = loss_from_logit(z, y[row]);
  correct[row] = ((z > 0) == (y[row] > 0.5)) ? 1.0 : 0.0;
}

__global__ void evaluate_sums(const double* loss, const double* correct, long long count, double* out) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  double loss_sum = 0, correct_sum = 0;
  for (long long i = 0; i < count; ++i) {
    loss_sum += loss[i];
    correct_sum += correct[i];
  }
  out[0] = loss_sum;
  out[1] = correct_sum;
}

constexpr int kThreads = 128;

unsigned blocks_for(long long count) {
  return static_cast<unsigned>((std::max(count, 1LL) + kThreads - 1) / kThreads);
}

}  // namespace

bool gpu_available() {
  int devices = 0;
  return cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0;
}

struct DeviceModel::Buffers {
  long long rows = 0;
  long long features = 0;
  double* x = nullptr;
  double* y = nullptr;
  double* weights = nullptr;
  long long* batch = nullptr;  // row indices of the current batch; sized to the shard
  double* error = nullptr;     // per row of the batch / shard
  double* loss = nullptr;
  double* out = nullptr;       // d + 2 sums
  cudaStream_t stream = nullptr;

  ~Buffers() {
    for (void* pointer : {static_cast<void*>(x), static_cast<void*>(y), static_cast<void*>(weights),
                          static_cast<void*>(batch), static_cast<void*>(error), static_cast<void*>(loss),
                          static_cast<void*>(out)}) {
      if (pointer) cudaFree(pointer);
    }
    if (stream) cudaStreamDestroy(stream);
  }

  void upload_weights(const Model& model) {
    check(cudaMemcpyAsync(weights, model.weights.data(), model.weights.size() * sizeof(double),
                          cudaMemcpyHostToDevice, stream),
          "copy weights to the GPU");
  }
};

DeviceModel::DeviceModel(const Shard& shard) : buffers_(std::make_unique<Buffers>()) {
  auto& b = *buffers_;
  b.rows = static_cast<long long>(shard.rows());
  b.features = shard.features;
  check(cudaStreamCreateWithFlags(&b.stream, cudaStreamNonBlocking), "cudaStreamCreate");
  b.x = device_alloc<double>(shard.x.size());
  b.y = device_alloc<double>(shard.y.size());
  b.weights = device_alloc<double>(static_cast<std::size_t>(b.features));
  b.batch = device_alloc<long long>(shard.rows());
  b.error = device_alloc<double>(shard.rows());
  b.loss = device_alloc<double>(shard.rows());
  b.out = device_alloc<double>(static_cast<std::size_t>(b.features) + 2);
  check(cudaMemcpy(b.x, shard.x.data(), shard.x.size() * sizeof(double), cudaMemcpyHostToDevice),
        "copy the shard to the GPU");
  check(cudaMemcpy(b.y, shard.y.data(), shard.y.size() * sizeof(double), cudaMemcpyHostToDevice),
        "copy the labels to the GPU");
}

DeviceModel::~DeviceModel() = default;

double DeviceModel::accumulate_gradient(const Model& model, std::span<const std::size_t> rows,
                                        std::span<double> gradient) {
  auto& b = *buffers_;
  const long long d = b.features;
  const auto count = static_cast<long long>(rows.size());
  std::vector<long long> indices(rows.begin(), rows.end());
  std::vector<double> sums(static_cast<std::size_t>(d) + 2);
  b.upload_weights(model);
  check(cudaMemcpyAsync(b.batch, indices.data(), indices.size() * sizeof(long long), cudaMemcpyHostToDevice,
                        b.stream),
        "copy the batch to the GPU");
  if (count > 0) {
    row_terms<<<blocks_for(count), kThreads, 0, b.stream>>>(b.x, b.y, b.batch, count, b.weights, model.bias, d,
                                                             b.error, b.loss);
  }
  column_sums<<<blocks_for(d + 2), kThreads, 0, b.stream>>>(b.x, b.batch, count, d, b.error, b.loss, b.out);
  check(cudaGetLastError(), "launch the gradient kernels");
  check(cudaMemcpyAsync(sums.data(), b.out, sums.size() * sizeof(double), cudaMemcpyDeviceToHost, b.stream),
        "copy the gradient from the GPU");
  check(cudaStreamSynchronize(b.stream), "the gradient kernels");
  for (long long j = 0; j <= d; ++j) gradient[static_cast<std::size_t>(j)] += sums[static_cast<std::size_t>(j)];
  return sums[static_cast<std::size_t>(d) + 1];
}

Evaluation DeviceModel::evaluate(const Model& model) {
  auto& b = *buffers_;
  double sums[2] = {0, 0};
  b.upload_weights(model);
  if (b.rows > 0) {
    evaluate_rows<<<blocks_for(b.rows), kThreads, 0, b.stream>>>(b.x, b.y, b.rows, b.weights, model.bias,
                                                                  b.features, b.loss, b.error);
    evaluate_sums<<<1, 1, 0, b.stream>>>(b.loss, b.error, b.rows, b.out);
    check(cudaGetLastError(), "launch the evaluation kernels");
    check(cudaMemcpyAsync(sums, b.out, sizeof(sums), cudaMemcpyDeviceToHost, b.stream),
          "copy the evaluation from the GPU");
  }
  check(cudaStreamSynchronize(b.stream), "the evaluation kernels");
  return Evaluation{sums[0], sums[1], static_cast<double>(b.rows)};
}

}  // namespace dlx::examples
