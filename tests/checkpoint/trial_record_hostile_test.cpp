// SPDX-License-Identifier: Apache-2.0
// Hostile trial.h5 files (issue 17, findings 3, 5 and 6), what `dlx status`, dlx-launch and the
// SDK read: metric tables that declare 2^29 rows they do not store, link cycles, soft and
// external links (to a FIFO), external storage in a FIFO, deep nesting, a FIFO or a symbolic link
// named trial.h5. Each is refused with its message, without blocking or allocating by what the
// file declares.
#include <string>

#include <catch2/catch.hpp>

#include "dlx/record/trial_record.hpp"
#include "h5_edit.hpp"
#include "hostile_files.hpp"
#include "test_support.hpp"

using namespace dlx::checkpoint;
using namespace dlx::record;
using namespace dlx::checkpoint::testing;
using Catch::Matchers::Contains;

namespace {

std::string load_error(const std::filesystem::path& path) {
  try {
    load_trial_record(path);
  } catch (const RecordError& e) {
    return e.what();
  }
  return "(no RecordError)";
}

constexpr std::uint64_t kRows = std::uint64_t{1} << 29;

}  // namespace

TEST_CASE("metric tables that declare 2^29 rows they do not store are refused",
          "[unit][trial_record][hostile]") {
  ScratchDir dir;
  const auto path = dir.path() / kTrialFileName;
  // Format 3 stores metric tables chunked (appended to): a chunked one is read only when every
  // chunk of its extent is in the file, unfiltered, in chunks of at most 1 MiB.
  SECTION("chunked in 8 MiB chunks, none stored") {
    write_trial_record_then(path, [](hid_t f) {
      add_declared_dataset(f, "/metrics/training/steps", kRows, H5T_STD_I64LE, Storage::chunked, false);
      add_declared_dataset(f, "/metrics/training/loss", kRows, H5T_IEEE_F64LE, Storage::chunked, false);
    });
    CHECK(std::filesystem::file_size(path) < 64 * 1024);
    CHECK_THAT(load_error(path), Contains(path.string() + ": dataset /metrics/training/steps is stored in "
                                                          "chunks of [1048576] x 8 bytes, over the 1048576 "
                                                          "bytes of a chunk dlx reads"));
  }
  SECTION("chunked in small chunks, none stored") {
    write_trial_record_then(path, [](hid_t f) {
      add_declared_dataset(f, "/metrics/training/loss", kRows, H5T_IEEE_F64LE, Storage::chunked_small, false);
    });
    CHECK(std::filesystem::file_size(path) < 64 * 1024);
    CHECK_THAT(load_error(path), Contains("dataset /metrics/training/loss declares 4294967296 bytes "
                                          "([536870912] x 8 bytes) but the file holds 0 bytes of chunks "
                                          "for it"));
  }
  SECTION("chunked and compressed: a deflate bomb") {
    write_trial_record_then(path, [](hid_t f) {
      add_declared_dataset(f, "/metrics/training/loss", std::uint64_t{1} << 24, H5T_IEEE_F64LE,
                           Storage::chunked_deflate, false);
    });
    CHECK_THAT(load_error(path), Contains("dataset /metrics/training/loss is stored through 1 filter(s) "
                                          "(compression); only unfiltered datasets are read"));
  }
  SECTION("chunked in a format 2 file, which dlx wrote contiguous") {
    write_trial_record_then(path, [](hid_t) {});  // format 3: chunked metric tables
    set_format_version(path, 2);
    CHECK_THAT(load_error(path), Contains("dataset /metrics/training/steps is stored chunked; only "
                                          "contiguous datasets are read"));
  }
  SECTION("contiguous, never allocated") {
    write_trial_record_then(path, [](hid_t f) {
      add_declared_dataset(f, "/metrics/validation/val_loss", kRows, H5T_IEEE_F64LE,
                           Storage::contiguous_missing, false);
    });
    CHECK_THAT(load_error(path), Contains("dataset /metrics/validation/val_loss declares 4294967296 "
                                          "bytes ([536870912] x 8 bytes) but the file holds 0 bytes"));
  }
  SECTION("stored in an external file, a FIFO") {
    const auto fifo = dir.path() / "fifo";
    make_fifo(fifo);
    write_trial_record_then(path, [&](hid_t f) {
      add_external_storage_dataset(f, "/metrics/training/loss", 3, fifo);
    });
    CHECK_THAT(load_error(path), Contains("dataset /metrics/training/loss keeps its data in 1 "
                                          "external file(s), which are never read"));
  }
}

TEST_CASE("links in a trial record other than one hard link per object are refused",
          "[unit][trial_record][hostile]") {
  ScratchDir dir;
  const auto path = dir.path() / kTrialFileName;
  const auto fifo = dir.path() / "fifo.h5";
  make_fifo(fifo);
  SECTION("a soft-link cycle") {
    write_trial_record_then(path, [](hid_t f) { add_soft_link(f, "/metrics", "/metrics/validation"); });
    CHECK_THAT(load_error(path), Contains("not a dlx trial record: /metrics/validation is a soft link"));
  }
  SECTION("a hard-link cycle") {
    write_trial_record_then(path, [](hid_t f) { add_hard_link(f, "/metrics", "/metrics/training/up"); });
    CHECK_THAT(load_error(path), Contains("/metrics/training/up is a second link to /metrics "));
  }
  SECTION("one column under two names") {
    write_trial_record_then(path, [](hid_t f) {
      add_hard_link(f, "/metrics/training/loss", "/metrics/training/loss_again");
    });
    CHECK_THAT(load_error(path),
               Contains("/metrics/training/loss_again is a second link to /metrics/training/loss"));
  }
  SECTION("an external link to a FIFO") {
    write_trial_record_then(path, [&](hid_t f) { add_external_link(f, fifo, "/", "/hparams"); });
    CHECK_THAT(load_error(path), Contains("not a dlx trial record: /hparams is an external link"));
  }
  SECTION("20,000 nested groups among the metrics") {
    write_trial_record_then(path, [](hid_t f) { add_nested_groups(f, "/metrics/training/deep", 20000); });
    CHECK_THAT(load_error(path), Contains("/metrics/training/deep is not a dataset"));
  }
}

TEST_CASE("a trial record's hyperparameters nested 1,000,000 deep are refused, not recursed into",
          "[unit][trial_record][hostile]") {
  ScratchDir dir;
  const auto path = dir.path() / kTrialFileName;
  const std::size_t depth = 1000000;
  const auto json = "{\"a\":" + std::string(depth, '[') + std::string(depth, ']') + "}";
  write_trial_record_then(path, [&](hid_t f) { set_string_attribute(f, "/", "hparams_json", json, false); });
  CHECK_THAT(load_error(path), Contains("attribute 'hparams_json' of / is not a JSON object of hyperparameters "
                                         "nested at most 64 levels deep"));
}

TEST_CASE("a FIFO or a symbolic link named trial.h5 is refused without being opened",
          "[unit][trial_record][hostile]") {
  ScratchDir dir;
  const auto path = dir.path() / kTrialFileName;
  SECTION("FIFO") {
    make_fifo(path);
    CHECK_THAT(load_error(path),
               Contains(path.string() + ": not a regular file (a FIFO), so not a dlx trial record"));
    CHECK_THROWS_WITH(load_trial_record_if_exists(path), Contains("not a regular file (a FIFO)"));
  }
  SECTION("symbolic link, even a dangling one") {
    const auto target = dir.path() / "elsewhere.h5";
    save_trial_record(sample_record(), target);
    std::filesystem::create_symlink(target, path);
    CHECK_THAT(load_error(path), Contains(path.string() + ": is a symbolic link; a dlx trial record "
                                                          "is read only from a regular file"));
    std::filesystem::remove(target);
    CHECK_THROWS_WITH(load_trial_record_if_exists(path), Contains("is a symbolic link"));
    std::filesystem::remove(path);
    CHECK_FALSE(load_trial_record_if_exists(path));
  }
}
