// SPDX-License-Identifier: Apache-2.0
// trial.h5's notes (docs/file-format.md): the hyperparameter name warnings and the last crash.
// They round-trip, stay within their bounds when written, are absent from records without them,
// and a file that breaks the bounds (crafted, or damaged) is refused with a message naming the
// attribute.
#include <filesystem>
#include <string>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "dlx/record/trial_record.hpp"
#include "h5_edit.hpp"
#include "hostile_files.hpp"
#include "test_support.hpp"

using namespace dlx::record;
using namespace dlx::checkpoint::testing;
using Catch::Matchers::Contains;

namespace {

std::string notes_load_error(const std::filesystem::path& path) {
  try {
    load_trial_record(path);
  } catch (const RecordError& e) {
    return e.what();
  }
  return "(no RecordError)";
}

HparamWarning typo() {
  return {"default", "batch_size",
          "dlx: warning: hyperparameter 'batch_size' is not defined by the experiment, so trial.hparam(\"batch_size\", "
          "...) uses its default 64 (did you mean 'batch_sise'? the experiment defines: lr, batch_sise)"};
}

}  // namespace

TEST_CASE("trial record notes: warnings and the last crash round-trip, absent ones read as none",
          "[unit][trial_record]") {
  ScratchDir dir;
  const auto path = dir.path() / kTrialFileName;
  auto record = sample_record();
  SECTION("none") {
    save_trial_record(record, path);
    const auto loaded = load_trial_record(path);
    CHECK(loaded.hparam_warnings.empty());
    CHECK(loaded.last_error.empty());
    CHECK(loaded.same_failures == 0);
  }
  SECTION("some") {
    CHECK(add_hparam_warning(record, typo()));
    CHECK(add_hparam_warning(record, {"unread", "batch_sise", "dlx: warning: the experiment defines 'batch_sise'"}));
    record.last_error = "exit 1: ValueError: lr must be positive";
    record.same_failures = 2;
    save_trial_record(record, path);
    const auto loaded = load_trial_record(path);
    CHECK(loaded.hparam_warnings == record.hparam_warnings);
    CHECK(loaded.last_error == record.last_error);
    CHECK(loaded.same_failures == 2);
  }
}

TEST_CASE("trial record notes: each warning once, at most 64, each cut to its bound", "[unit][trial_record]") {
  TrialRecord record;
  CHECK(add_hparam_warning(record, typo()));
  CHECK_FALSE(add_hparam_warning(record, typo()));  // the same kind and name: kept once
  auto unread = typo();
  unread.kind = "unread";
  CHECK(add_hparam_warning(record, unread));  // the same name, another kind
  for (int i = 0; i < 100; ++i) add_hparam_warning(record, {"default", fmt::format("h{}", i), "text"});
  CHECK(record.hparam_warnings.size() == kMaxHparamWarnings);
  CHECK_FALSE(add_hparam_warning(record, {"default", "one_more", "text"}));

  TrialRecord long_one;
  add_hparam_warning(long_one, {"default", std::string(5000, 'n'), std::string(5000, 'm')});
  CHECK(long_one.hparam_warnings[0].name.size() <= kMaxHparamWarningNameBytes);
  CHECK(long_one.hparam_warnings[0].message.size() <= kMaxHparamWarningBytes);
  CHECK(long_one.hparam_warnings[0].message.ends_with("..."));
  // A cut never splits a UTF-8 character: "é" is two bytes.
  const auto cut = bounded_text(std::string(9, 'a') + "\xc3\xa9" + "bcdef", 13);
  CHECK(cut == std::string(9, 'a') + "...");
  CHECK(bounded_text("short", 13) == "short");
}

TEST_CASE("trial record notes: files past the bounds are refused, naming the attribute",
          "[unit][trial_record][hostile]") {
  ScratchDir dir;
  const auto path = dir.path() / kTrialFileName;
  const auto with_attribute = [&](const char* name, const std::string& value) {
    write_trial_record_then(path, [&](hid_t f) { set_string_attribute(f, "/", name, value, false); });
    return notes_load_error(path);
  };
  CHECK_THAT(with_attribute("hparam_warnings", "{\"kind\": 1}"),
             Contains("attribute 'hparam_warnings' of / is not a JSON array"));
  CHECK_THAT(with_attribute("hparam_warnings", "[1]"),
             Contains("attribute 'hparam_warnings' of / has entry 0 that is not an object"));
  CHECK_THAT(with_attribute("hparam_warnings", R"([{"kind": "typo", "name": "x", "message": "m"}])"),
             Contains("attribute 'hparam_warnings' of / has entry 0 of kind 'typo' (not default or unread)"));
  CHECK_THAT(with_attribute("hparam_warnings", R"([{"kind": "unread", "message": "m"}])"),
             Contains("attribute 'hparam_warnings' of / has no string 'name' in entry 0"));
  std::string many = "[";
  for (int i = 0; i < 65; ++i) many += fmt::format(R"({}{{"kind": "unread", "name": "h{}", "message": "m"}})", i ? "," : "", i);
  CHECK_THAT(with_attribute("hparam_warnings", many + "]"),
             Contains("attribute 'hparam_warnings' of / holds 65 warnings, over the limit of 64"));
  CHECK_THAT(with_attribute("hparam_warnings",
                            R"([{"kind": "unread", "name": "x", "message": ")" + std::string(3000, 'm') + "\"}]"),
             Contains("attribute 'hparam_warnings' of / has a 'message' of 3000 bytes in entry 0, over the limit of 2048"));
  CHECK_THAT(with_attribute("last_error", std::string(2000, 'e')),
             Contains("attribute 'last_error' of / is 2000 bytes, over the limit of 1024"));
}
