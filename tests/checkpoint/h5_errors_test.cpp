// SPDX-License-Identifier: Apache-2.0
// dlx::h5's errors (h5/include/dlx/h5/error.hpp): an h5::H5Error names the file and what failed,
// in words that say nothing of what the file was meant to be unless the caller said so (the
// `kind` of open_regular_file), and carries the errno of a failed system call. checkpoint/ turns
// them into CheckpointErrors and RecordErrors with the same message and errno
// (checkpoint/src/h5_boundary.hpp, record/src/h5_boundary.hpp).
#include <sys/stat.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

#include <catch2/catch.hpp>

#include "dlx/checkpoint/error.hpp"
#include "dlx/record/trial_record.hpp"
#include "dlx/h5/attributes.hpp"
#include "dlx/h5/datasets.hpp"
#include "dlx/h5/error.hpp"
#include "dlx/h5/objects.hpp"
#include "test_support.hpp"

namespace h5 = dlx::h5;
using dlx::checkpoint::CheckpointError;
using dlx::checkpoint::testing::ScratchDir;

namespace {

template <typename Call>
h5::H5Error h5_error_of(Call call) {
  try {
    call();
  } catch (const h5::H5Error& e) {
    return e;
  }
  FAIL("no h5::H5Error");
  return h5::H5Error("");
}

// A file with one group, /g, and nothing else.
void write_plain_file(const std::filesystem::path& path) {
  h5::QuietErrors quiet;
  auto file = h5::create_file(path);
  auto root = h5::open_root_group(file.get(), path);
  h5::create_group(root.get(), "g", path);
  root.reset();
  file.close(path, "HDF5 file");
}

}  // namespace

TEST_CASE("dlx::h5: what is missing is named, with no guess at what the file was for",
          "[unit][h5]") {
  ScratchDir dir;
  const auto path = dir.path() / "plain.h5";
  write_plain_file(path);
  h5::QuietErrors quiet;
  auto file = h5::open_file_read_only(path);
  auto root = h5::open_root_group(file.get(), path);
  SECTION("a group") {
    auto error = h5_error_of([&] { h5::open_group(root.get(), "nope", path); });
    CHECK(std::string(error.what()) == path.string() + ": missing group /nope");
    CHECK(error.error_number() == 0);
  }
  SECTION("an attribute") {
    auto error = h5_error_of([&] { h5::read_int64_attribute(root.get(), "nope", path); });
    CHECK(std::string(error.what()) == path.string() + ": missing attribute 'nope' of /");
  }
  SECTION("a dataset") {
    auto group = h5::open_group(root.get(), "g", path);
    auto error = h5_error_of([&] { h5::read_int64_vector(group.get(), "nope", path); });
    CHECK(std::string(error.what()) == path.string() + ": missing dataset /g/nope");
  }
}

TEST_CASE("dlx::h5: a file that is not what the caller expects is named by the caller's kind",
          "[unit][h5]") {
  ScratchDir dir;
  SECTION("a FIFO") {
    const auto fifo = dir.path() / "fifo.h5";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    auto error = h5_error_of(
        [&] { h5::open_regular_file(fifo, h5::Symlinks::refuse, "table of results"); });
    CHECK(std::string(error.what()) ==
          fifo.string() + ": not a regular file (a FIFO), so not a table of results");
  }
  SECTION("a file without the HDF5 signature") {
    const auto text = dir.path() / "text.h5";
    dlx::checkpoint::testing::write_bytes(text, "just text, not HDF5\n");
    auto error = h5_error_of([&] { h5::open_file_read_only(text); });
    CHECK(std::string(error.what()) ==
          text.string() + ": not an HDF5 file (no HDF5 signature), so not a HDF5 file");
  }
}

TEST_CASE("dlx::h5: a failed system call keeps its errno, through the record library's API too",
          "[unit][h5][checkpoint]") {
  ScratchDir dir;
  const auto missing = dir.path() / "no-such-dir" / "trial.h5";
  SECTION("h5::create_file") {
    auto error = h5_error_of([&] { h5::create_file(missing); });
    CHECK(error.error_number() == ENOENT);
    CHECK_THAT(error.what(), Catch::Matchers::StartsWith(missing.string() +
                                                         ": cannot create HDF5 file: "));
  }
  SECTION("load_trial_record: a RecordError with the same words and errno") {
    const auto h5_words =
        std::string(h5_error_of([&] {
                      h5::open_regular_file(missing, h5::Symlinks::refuse, "dlx trial record");
                    }).what());
    try {
      dlx::record::load_trial_record_file(missing);
      FAIL("no RecordError");
    } catch (const dlx::record::RecordError& e) {
      CHECK(std::string(e.what()) == h5_words);
      CHECK(e.error_number() == ENOENT);
    }
  }
}

TEST_CASE("dlx::h5: a file replaced by a rename while it is opened is opened again, not an error",
          "[unit][h5]") {
  // What a reader of trial.h5 (dlx status, dlx report) meets while the trainer rewrites it through
  // temp + rename: HDF5 resolves /proc/self/fd/<fd> with realpath(), which fails once the file
  // behind the descriptor is unlinked. A writer thread replaces the file every half millisecond
  // (a trainer does it every few seconds).
  ScratchDir dir;
  const auto path = dir.path() / "live.h5";
  const auto image = dir.path() / "image.h5";
  write_plain_file(image);
  std::filesystem::copy_file(image, path);
  std::atomic<bool> stop{false};
  std::atomic<int> replacements{0};
  std::thread writer([&] {
    const auto temporary = dir.path() / "live.h5.tmp";
    while (!stop.load()) {
      std::filesystem::copy_file(image, temporary, std::filesystem::copy_options::overwrite_existing);
      std::filesystem::rename(temporary, path);
      replacements.fetch_add(1);
      std::this_thread::sleep_for(std::chrono::microseconds(500));  // a reader gets through between two
    }
  });
  h5::QuietErrors quiet;
  int opened = 0;
  std::string failure;
  for (int i = 0; i < 400 && failure.empty(); ++i) {
    try {
      auto file = h5::open_file_read_only(path);
      h5::open_group(h5::open_root_group(file.get(), path).get(), "g", path);
      ++opened;
    } catch (const h5::H5Error& e) {
      failure = e.what();
    }
  }
  stop.store(true);
  writer.join();
  INFO("replacements: " << replacements.load() << "; " << failure);
  CHECK(failure.empty());
  CHECK(opened == 400);
  CHECK(replacements.load() > 0);
}
