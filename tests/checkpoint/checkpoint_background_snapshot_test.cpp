// SPDX-License-Identifier: Apache-2.0
// CheckpointWriter's background snapshot: tensors marked snapshot_in_background are copied on
// the writer's thread after save() returns; the caller keeps them unchanged until
// wait_for_snapshot(), and changes them freely after it. The others are copied before save()
// returns, as always; a sync writer copies every tensor before returning. withdraw() deletes the
// checkpoint the writer published last, and no other. A device tensor on a machine without a GPU
// is refused by save() itself, before anything is written.
#include <cstring>
#include <filesystem>

#include <catch2/catch.hpp>

#include "checkpoint_samples.hpp"
#include "dlx/checkpoint/writer.hpp"
#include "test_support.hpp"

using namespace dlx::checkpoint;
using Catch::Matchers::Contains;
using dlx::checkpoint::testing::ScratchDir;

namespace {

WriterOptions snapshot_writer_options(const std::filesystem::path& directory, bool async) {
  WriterOptions out;
  out.directory = directory;
  out.async = async;
  return out;
}

void scribble_over(const TensorView& view) {
  std::memset(const_cast<void*>(view.data), 0xa5, view.byte_size());
}

}  // namespace

TEST_CASE("a background snapshot holds the tensors as they were until wait_for_snapshot()",
          "[unit][checkpoint][writer][snapshot]") {
  ScratchDir dir;
  const bool async = GENERATE(true, false);
  CAPTURE(async);
  CheckpointWriter writer(snapshot_writer_options(dir.path(), async));
  CHECK_FALSE(writer.snapshot_pending());
  writer.wait_for_snapshot();  // nothing in flight: returns at once
  testing::SampleContent sample(7, std::size_t{8} << 20);
  const testing::SampleContent expected(7, std::size_t{8} << 20);
  auto& tensors = sample.content().tensors;
  REQUIRE(tensors.size() >= 3);
  tensors[0].snapshot_in_background = true;  // model/big, 32 MiB: the optimizer's share
  tensors[2].snapshot_in_background = true;
  const auto path = writer.save(sample.content());
  // What was not marked is the caller's again as save() returns.
  scribble_over(tensors[1]);
  writer.wait_for_snapshot();
  CHECK_FALSE(writer.snapshot_pending());
  // And what was, once wait_for_snapshot() has returned: the next update may run.
  scribble_over(tensors[0]);
  scribble_over(tensors[2]);
  writer.wait();
  CHECK(writer.last_published() == path);
  CHECK(testing::same_as(expected.content(), load_checkpoint(path)));
}

TEST_CASE("consecutive background snapshots reuse their buffers and stay exact",
          "[unit][checkpoint][writer][snapshot]") {
  ScratchDir dir;
  CheckpointWriter writer(snapshot_writer_options(dir.path(), true));
  for (std::int64_t step = 1; step <= 4; ++step) {
    testing::SampleContent sample(step, std::size_t{1} << 20);
    const testing::SampleContent expected(step, std::size_t{1} << 20);
    for (auto& tensor : sample.content().tensors) tensor.snapshot_in_background = true;
    const auto path = writer.save(sample.content());
    writer.wait_for_snapshot();
    for (const auto& tensor : sample.content().tensors) scribble_over(tensor);
    writer.wait();
    CHECK(testing::same_as(expected.content(), load_checkpoint(path)));
  }
}

TEST_CASE("withdraw deletes the checkpoint the writer published last, and no other",
          "[unit][checkpoint][writer][snapshot]") {
  ScratchDir dir;
  CheckpointWriter writer(snapshot_writer_options(dir.path(), true));
  testing::SampleContent first(1, 1000), second(2, 1000);
  const auto path1 = writer.save(first.content());
  const auto path2 = writer.save(second.content());
  CHECK_FALSE(writer.withdraw(path1));  // an older one stays
  CHECK(std::filesystem::exists(path1));
  CHECK(writer.withdraw(path2));        // waits for the save, then deletes it
  CHECK_FALSE(std::filesystem::exists(path2));
  CHECK_FALSE(writer.withdraw(path2));
  CHECK(testing::file_names_in(dir.path()) == std::vector<std::string>{"step-1.h5"});

  // A save that failed published nothing: nothing to delete, and its error is dropped.
  auto missing = dir.path() / "not-yet";
  CheckpointWriter failing(snapshot_writer_options(missing, true));
  testing::SampleContent third(3, 1000);
  const auto path3 = failing.save(third.content());
  CHECK_FALSE(failing.withdraw(path3));
  CHECK_NOTHROW(failing.wait());
}

TEST_CASE("a device tensor without a GPU is refused by save() itself, and nothing is written",
          "[unit][checkpoint][writer][snapshot]") {
  ScratchDir dir;
  CheckpointWriter writer(snapshot_writer_options(dir.path(), true));
  testing::SampleContent sample(5, 1000);
  auto& tensor = sample.content().tensors.front();
  tensor.location = MemoryLocation::cuda_device;  // host memory, which the library must not read
  tensor.snapshot_in_background = GENERATE(false, true);
  try {
    writer.save(sample.content());
    FAIL("a device tensor was accepted on a machine without a GPU");
  } catch (const CheckpointError& error) {
    const std::string text = error.what();
    CAPTURE(text);
    CHECK((text.find("snapshot of device tensors: cudaGetDevice(&device) failed") !=
               std::string::npos ||
           text.find("this dlx was built without CUDA") != std::string::npos));
  }
  CHECK_FALSE(writer.snapshot_pending());
  CHECK_NOTHROW(writer.wait());
  CHECK(testing::file_names_in(dir.path()).empty());
}
