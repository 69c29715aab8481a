// SPDX-License-Identifier: Apache-2.0
// Hostile checkpoints (issue 17, findings 3, 5 and 6): link cycles, soft and external links (to a
// FIFO too), 20,000 nested groups, tensors that declare 8 GiB or 1 TiB they do not store, virtual
// datasets, a FIFO or a symbolic link named step-<N>.h5. Every reader (summary, verify, load)
// refuses each with the message checked, and discovery skips it with that reason and resumes
// from the older good checkpoint beside it. (The same files through the real `dlx` binary, with
// a hang guard and a memory limit: dlx_cli_hostile_test.cpp.)
#include <unistd.h>

#include <string>

#include <catch2/catch.hpp>

#include "checkpoint_samples.hpp"
#include "dlx/checkpoint/checkpoint.hpp"
#include "dlx/checkpoint/discovery.hpp"
#include "dlx/h5/limits.hpp"
#include "hostile_files.hpp"
#include "test_support.hpp"

using namespace dlx::checkpoint;
using namespace dlx::checkpoint::testing;
using Catch::Matchers::Contains;

namespace {

template <class Read>
std::string error_of(Read read) {
  try {
    read();
  } catch (const CheckpointError& e) {
    return e.what();
  }
  return "(no CheckpointError)";
}

// Every reader refuses `path` with `message`; discovery in its directory skips it with that
// reason and finds the good checkpoint of step 1 beside it.
void check_refused_everywhere(const std::filesystem::path& path, const std::string& message) {
  CAPTURE(path, message);
  CHECK_THAT(error_of([&] { read_checkpoint_summary(path); }), Contains(message));
  CHECK_THAT(error_of([&] { verify_checkpoint(path); }), Contains(message));
  CHECK_THAT(error_of([&] { load_checkpoint(path); }), Contains(message));
  CHECK_FALSE(is_valid_checkpoint(path));

  const auto dir = path.parent_path();
  SampleContent good(1, 10);
  save_checkpoint(good.content(), checkpoint_path(dir, 1));
  for (auto verification : {Verification::full, Verification::metadata}) {
    auto found = find_latest_valid(dir, {}, verification);
    REQUIRE(found.path);
    CHECK(*found.path == checkpoint_path(dir, 1));
    REQUIRE(found.skipped.size() == 1);
    CHECK(found.skipped[0].path == path);
    CHECK_THAT(found.skipped[0].reason, Contains(message));
  }
  auto loaded = load_latest_valid(dir);
  REQUIRE(loaded.checkpoint);
  CHECK(loaded.checkpoint->metadata.step == 1);
  REQUIRE(loaded.skipped.size() == 1);
  CHECK_THAT(loaded.skipped[0].reason, Contains(message));
}

constexpr std::uint64_t kGiB = std::uint64_t{1} << 30;

}  // namespace

TEST_CASE("link cycles in a checkpoint are refused, not followed", "[unit][checkpoint][hostile]") {
  ScratchDir dir;
  const auto path = checkpoint_path(dir.path(), 5);
  SECTION("a hard link from a group to itself") {
    write_checkpoint_then(path, 5, [](hid_t f) { add_hard_link(f, "/tensors/model", "/tensors/model/loop"); });
    check_refused_everywhere(path, "not a dlx checkpoint: /tensors/model/loop is a second link to "
                                   "/tensors/model (a hard-link cycle");
  }
  SECTION("a hard link to the root group") {
    write_checkpoint_then(path, 5, [](hid_t f) { add_hard_link(f, "/", "/tensors/misc/root"); });
    check_refused_everywhere(path, "/tensors/misc/root is a second link to / ");
  }
  SECTION("one dataset under two names") {
    write_checkpoint_then(path, 5, [](hid_t f) { add_hard_link(f, "/tensors/model/big", "/tensors/model/zz"); });
    check_refused_everywhere(path, "/tensors/model/zz is a second link to /tensors/model/big");
  }
  SECTION("a soft link to an ancestor") {
    write_checkpoint_then(path, 5, [](hid_t f) { add_soft_link(f, "/tensors", "/tensors/model/loop"); });
    check_refused_everywhere(path, "not a dlx checkpoint: /tensors/model/loop is a soft link (only "
                                   "hard links are followed)");
  }
  SECTION("/tensors itself a soft link") {
    write_checkpoint_then(path, 5, [](hid_t f) { add_soft_link(f, "/", "/tensors"); });
    check_refused_everywhere(path, "/tensors is a soft link");
  }
}

TEST_CASE("external links in a checkpoint are refused without opening their file",
          "[unit][checkpoint][hostile]") {
  ScratchDir dir;
  const auto path = checkpoint_path(dir.path(), 5);
  const auto fifo = dir.path() / "fifo.h5";
  make_fifo(fifo);  // following a link to it would block forever
  SECTION("a tensor") {
    write_checkpoint_then(path, 5, [&](hid_t f) { add_external_link(f, fifo, "/d", "/tensors/model/ext"); });
    check_refused_everywhere(path, "/tensors/model/ext is an external link (only hard links are "
                                   "followed)");
  }
  SECTION("the state group") {
    write_checkpoint_then(path, 5, [&](hid_t f) { add_external_link(f, fifo, "/", "/state"); });
    check_refused_everywhere(path, "/state is an external link");
  }
  SECTION("a virtual tensor mapped from a FIFO") {
    write_checkpoint_then(path, 5, [&](hid_t f) { add_virtual_dataset(f, "/tensors/model/big", 10, fifo); });
    check_refused_everywhere(path, "tensor 'model/big' is stored virtual (mapped from other datasets "
                                   "and files); only contiguous datasets are read");
  }
}

TEST_CASE("nesting below /tensors is capped at kMaxGroupDepth", "[unit][checkpoint][hostile]") {
  ScratchDir dir;
  SECTION("20,000 nested groups") {
    const auto path = checkpoint_path(dir.path(), 5);
    write_checkpoint_then(path, 5, [](hid_t f) { add_nested_groups(f, "/tensors/deep", 20000); });
    check_refused_everywhere(path, "is nested more than 64 groups deep below /tensors (dlx's limit)");
  }
  SECTION("a tensor name of 64 groups loads; one of 65 is refused") {
    STATIC_REQUIRE(dlx::h5::kMaxGroupDepth == 64);
    for (int groups : {64, 65}) {
      CAPTURE(groups);
      std::string name;
      for (int i = 0; i < groups; ++i) name += "g/";
      name += "w";
      std::vector<float> values{1, 2, 3};
      CheckpointContent content;
      content.metadata.step = groups;
      content.tensors.push_back({name, DType::float32, {3}, values.data()});
      const auto path = checkpoint_path(dir.path(), groups);
      save_checkpoint(content, path);
      if (groups == 64) {
        CHECK(load_checkpoint(path).tensor(name).as<float>()[2] == 3);
      } else {
        CHECK_THAT(error_of([&] { verify_checkpoint(path); }),
                   Contains("is nested more than 64 groups deep"));
      }
    }
  }
}

TEST_CASE("a tensor that declares bytes the file does not hold is refused before any allocation",
          "[unit][checkpoint][hostile]") {
  ScratchDir dir;
  const auto path = checkpoint_path(dir.path(), 5);
  SECTION("8 GiB, chunked, no chunk stored") {
    write_checkpoint_then(path, 5, [](hid_t f) {
      add_declared_dataset(f, "/tensors/model/big", 2 * kGiB, H5T_IEEE_F32LE, Storage::chunked, true);
    });
    CHECK(std::filesystem::file_size(path) < 64 * 1024);
    check_refused_everywhere(path, "tensor 'model/big' is stored chunked; only contiguous datasets "
                                   "are read");
  }
  SECTION("1 TiB, chunked") {
    write_checkpoint_then(path, 5, [](hid_t f) {
      add_declared_dataset(f, "/tensors/model/big", 256 * kGiB, H5T_IEEE_F32LE, Storage::chunked, true);
    });
    CHECK(std::filesystem::file_size(path) < 1024 * 1024);
    check_refused_everywhere(path, "tensor 'model/big' is stored chunked");
  }
  SECTION("8 GiB, contiguous, never allocated") {
    write_checkpoint_then(path, 5, [](hid_t f) {
      add_declared_dataset(f, "/tensors/model/big", 2 * kGiB, H5T_IEEE_F32LE,
                           Storage::contiguous_missing, true);
    });
    CHECK(std::filesystem::file_size(path) < 64 * 1024);
    check_refused_everywhere(path, "tensor 'model/big' declares 8589934592 bytes ([2147483648] x 4 "
                                   "bytes) but the file holds 0 bytes for it");
  }
}

TEST_CASE("a tensor with an empty (null) dataspace is refused, not read as a scalar",
          "[unit][checkpoint][hostile]") {
  ScratchDir dir;
  const auto path = checkpoint_path(dir.path(), 5);
  write_checkpoint_then(path, 5, [](hid_t f) {
    add_declared_dataset(f, "/tensors/model/big", 1, H5T_IEEE_F32LE, Storage::null_space, true);
  });
  check_refused_everywhere(path, "tensor 'model/big' has an empty (null) dataspace");
}

TEST_CASE("a checkpoint's hyperparameters nested 1,000,000 deep are refused, not recursed into",
          "[unit][checkpoint][hostile]") {
  ScratchDir dir;
  const auto path = checkpoint_path(dir.path(), 5);
  const std::size_t depth = 1000000;
  const auto json = "{\"a\":" + std::string(depth, '[') + std::string(depth, ']') + "}";
  write_checkpoint_then(path, 5, [&](hid_t f) { set_string_attribute(f, "/", "hparams_json", json, true); });
  check_refused_everywhere(path, "attribute 'hparams_json' of / is not a JSON object of "
                                 "hyperparameters nested at most 64 levels deep");
}

TEST_CASE("a string attribute over kMaxAttributeBytes is refused", "[unit][checkpoint][hostile]") {
  ScratchDir dir;
  const auto path = checkpoint_path(dir.path(), 5);
  SampleContent sample(5, 10);
  // A fixed-length string of the limit's length, plus its terminating null.
  sample.content().state["note"] = std::string(dlx::h5::kMaxAttributeBytes, 'x');
  save_checkpoint(sample.content(), path);
  check_refused_everywhere(path, "attribute 'note' of /state declares 1 x 16777217 bytes, more "
                                 "than dlx's limit of 16777216 bytes for one attribute");
}

TEST_CASE("a FIFO or a symbolic link named step-<N>.h5", "[unit][checkpoint][hostile]") {
  ScratchDir dir;
  const auto path = checkpoint_path(dir.path(), 5);
  SECTION("a FIFO is refused without waiting for a writer") {
    make_fifo(path);
    check_refused_everywhere(path, path.string() + ": not a regular file (a FIFO), so not a dlx "
                                                   "checkpoint");
  }
  SECTION("a symbolic link: read when named, skipped by discovery") {
    ScratchDir elsewhere;
    const auto target = checkpoint_path(elsewhere.path(), 5);
    SampleContent sample(5, 10);
    save_checkpoint(sample.content(), target);
    std::filesystem::create_symlink(target, path);
    CHECK(verify_checkpoint(path).metadata.step == 5);  // a path the user gave: followed
    auto found = find_latest_valid(dir.path());
    CHECK_FALSE(found.path);
    REQUIRE(found.skipped.size() == 1);
    CHECK_THAT(found.skipped[0].reason,
               Contains(path.string() + ": is a symbolic link; a dlx checkpoint is read only from a "
                                        "regular file, never through a link"));
  }
}
