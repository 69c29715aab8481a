// SPDX-License-Identifier: Apache-2.0
// Writes the sample trial record (test_support.cpp) to the path given, for the h5py/h5dump test:
// whole, then extended by one training row as the metrics pipeline's compactions do
// (TrialRecordWriter::append), so that the readers see an appended file.
#include <exception>
#include <iostream>

#include "dlx/record/trial_record.hpp"
#include "dlx/record/trial_record_writer.hpp"
#include "test_support.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: dlx_write_sample_trial OUTPUT.h5\n";
    return 2;
  }
  try {
    const auto record = dlx::checkpoint::testing::sample_record();
    dlx::record::TrialRecordWriter writer(argv[1]);
    writer.write(record);
    dlx::record::MetricTableChanges training, validation;
    training.rows.append(400, {{"loss", 0.5}}, 1700000400.0);
    writer.append(record, training, validation);
  } catch (const std::exception& e) {
    std::cerr << "dlx_write_sample_trial: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
