// SPDX-License-Identifier: Apache-2.0
// Writes the test sample checkpoint (every dtype) as <dir>/step-100.h5 plus a damaged copy
// step-200.h5, for check_sample_checkpoint.sh. usage: dlx_write_sample_checkpoint DIR
#include <cstdio>
#include <exception>
#include <fstream>
#include <iterator>

#include "checkpoint_samples.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fputs("usage: dlx_write_sample_checkpoint DIR\n", stderr);
    return 2;
  }
  try {
    using namespace dlx::checkpoint;
    std::filesystem::path dir = argv[1];
    testing::SampleContent sample(100, 1000);
    save_checkpoint(sample.content(), checkpoint_path(dir, 100));
    testing::SampleContent newer(200, 1000);
    auto damaged = checkpoint_path(dir, 200);
    save_checkpoint(newer.content(), damaged);
    std::fstream file(damaged, std::ios::in | std::ios::out | std::ios::binary);
    auto at = static_cast<std::streamoff>(testing::tensor_offset(damaged, "model/big") + 10);
    file.seekp(at);
    file.put('\x7f');
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dlx_write_sample_checkpoint: %s\n", e.what());
    return 1;
  }
}
