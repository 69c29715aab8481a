// SPDX-License-Identifier: Apache-2.0
// CheckpointWriter: an async save snapshots before returning (later changes to the tensors do not
// reach the file), errors surface on the next call, retention runs after each save.
#include <cerrno>
#include <cstring>

#include <catch2/catch.hpp>

#include "checkpoint_samples.hpp"
#include "dlx/checkpoint/writer.hpp"
#include "test_support.hpp"

using namespace dlx::checkpoint;
using Catch::Matchers::Contains;
using dlx::checkpoint::testing::ScratchDir;

namespace {

WriterOptions options(const std::filesystem::path& directory, bool async = true) {
  WriterOptions out;
  out.directory = directory;
  out.async = async;
  return out;
}

}  // namespace

TEST_CASE("an async save writes the state as it was when save() returned",
          "[unit][checkpoint][writer]") {
  ScratchDir dir;
  CheckpointWriter writer(options(dir.path(), GENERATE(true, false)));
  testing::SampleContent sample(10, std::size_t{4} << 20);
  auto expected = testing::SampleContent(10, std::size_t{4} << 20);
  auto path = writer.save(sample.content());
  // Training goes on: overwrite the model right away.
  auto* big = const_cast<void*>(sample.content().tensors.front().data);
  std::memset(big, 0xff, sample.content().tensors.front().byte_size());
  writer.wait();
  CHECK(writer.last_published() == path);
  CHECK(testing::same_as(expected.content(), load_checkpoint(path)));
}

TEST_CASE("consecutive async saves reuse buffers and apply retention",
          "[unit][checkpoint][writer]") {
  ScratchDir dir;
  auto settings = options(dir.path());
  settings.retention = RetentionPolicy{.keep_latest = 2, .keep_best = 0, .keep_experiment_best = 0,
                                       .metric = "", .smaller_is_better = true};
  settings.referenced_steps = [] { return std::set<std::int64_t>{1}; };
  CheckpointWriter writer(settings);
  for (std::int64_t step = 1; step <= 5; ++step) {
    testing::SampleContent sample(step, 5000);
    writer.save(sample.content());
  }
  CHECK(writer.wait_for(std::chrono::seconds(60)));
  CHECK(testing::file_names_in(dir.path()) ==
        std::vector<std::string>{"step-1.h5", "step-4.h5", "step-5.h5"});
}

TEST_CASE("an async save's failure is reported once, and the writer keeps working",
          "[unit][checkpoint][writer]") {
  ScratchDir dir;
  auto missing = dir.path() / "not-yet";
  CheckpointWriter writer(options(missing));
  testing::SampleContent sample(1, 100);
  writer.save(sample.content());  // returns: the failure is in the background
  try {
    writer.wait();
    FAIL("no error reported");
  } catch (const CheckpointError& e) {
    CHECK(e.error_number() == ENOENT);
    CHECK_THAT(e.what(), Contains((missing / "step-1.h5").string()));
    CHECK_THAT(e.what(), Contains("No such file or directory"));
  }
  CHECK_NOTHROW(writer.wait());  // reported once
  std::filesystem::create_directory(missing);
  writer.save(sample.content());
  writer.wait();
  CHECK(testing::file_names_in(missing) == std::vector<std::string>{"step-1.h5"});
}
