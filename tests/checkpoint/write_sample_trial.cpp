// Writes the sample trial record (test_support.cpp) to the path given, for the h5py/h5dump test.
#include <exception>
#include <iostream>

#include "dlx/checkpoint/trial_record.hpp"
#include "test_support.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: dlx_write_sample_trial OUTPUT.h5\n";
    return 2;
  }
  try {
    dlx::checkpoint::save_trial_record(dlx::checkpoint::testing::sample_record(), argv[1]);
  } catch (const std::exception& e) {
    std::cerr << "dlx_write_sample_trial: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
