// SPDX-License-Identifier: Apache-2.0
// The allocator's look at the script an entrypoint runs (spank-plugin/entrypoint_check.hpp): which
// entrypoints name a script a look can check, a script the code snapshot lacks refused with the
// closest file it has (or with why a file on disk was left out), and without a snapshot a note.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "entrypoint_check.hpp"
#include "searcher_temp_dir.hpp"

using dlx::spank::entrypoint_script;
using dlx::spank::script_missing_from;
using dlx::spank::script_missing_from_snapshot;
using dlx::spank::script_not_executable_in;
using dlx::spank::script_not_executable_in_snapshot;

namespace {

dlx::config::Experiment with_entrypoint(std::vector<std::string> words, bool shell = false) {
  dlx::config::Experiment experiment;
  experiment.entrypoint = std::move(words);
  experiment.entrypoint_is_shell = shell;
  return experiment;
}

dlx::config::Experiment shell(const std::string& command) { return with_entrypoint({command}, true); }

}  // namespace

TEST_CASE("the script an entrypoint runs, when a look can be sure of it", "[plugin][entrypoint]") {
  CHECK(entrypoint_script(with_entrypoint({"python3", "train.py", "--lr", "0.1"})) == "train.py");
  CHECK(entrypoint_script(with_entrypoint({"/usr/bin/python3.11", "src/train.py"})) == "src/train.py");
  CHECK(entrypoint_script(with_entrypoint({"bash", "run.sh"})) == "run.sh");
  CHECK(entrypoint_script(with_entrypoint({"./train.sh", "--fast"})) == "./train.sh");
  CHECK(entrypoint_script(shell("python3 train.py --epochs 3")) == "train.py");
  CHECK(entrypoint_script(shell("  sh   scripts/run.sh")) == "scripts/run.sh");
  // Nothing a look can be sure of: a program from PATH, an absolute script (it may exist only on
  // the nodes or in an image), an option first, shell syntax.
  CHECK_FALSE(entrypoint_script(with_entrypoint({"dlx-example-logreg"})));
  CHECK_FALSE(entrypoint_script(with_entrypoint({"python3", "/shared/train.py"})));
  CHECK_FALSE(entrypoint_script(with_entrypoint({"python3", "-m", "trainer"})));
  CHECK_FALSE(entrypoint_script(with_entrypoint({"python3", "-u", "train.py"})));
  CHECK_FALSE(entrypoint_script(with_entrypoint({"python3"})));
  CHECK_FALSE(entrypoint_script(shell("cd src && python3 train.py")));
  CHECK_FALSE(entrypoint_script(shell("python3 \"my train.py\"")));
  CHECK_FALSE(entrypoint_script(shell("LR=1 python3 train.py")));
  CHECK_FALSE(entrypoint_script(shell("python3 $SCRIPT")));
  CHECK_FALSE(entrypoint_script(with_entrypoint({})));
}

TEST_CASE("a script the code snapshot lacks is refused with the file it probably meant", "[plugin][entrypoint]") {
  dlx::testing::TempDir root;
  const std::vector<std::string> files{"README.md", "src/data.py", "src/train.py", "src/model/__main__.py",
                                       "train.py"};
  // There: at the root, under the start directory, a package directory, a path through "..".
  CHECK_FALSE(script_missing_from_snapshot(with_entrypoint({"python3", "train.py"}), files, root.path, ""));
  CHECK_FALSE(script_missing_from_snapshot(with_entrypoint({"python3", "train.py"}), files, root.path, "src"));
  CHECK_FALSE(script_missing_from_snapshot(with_entrypoint({"python3", "model"}), files, root.path, "src"));
  CHECK_FALSE(script_missing_from_snapshot(with_entrypoint({"python3", "../train.py"}), files, root.path, "src"));
  // Outside the snapshot: nothing to say.
  CHECK_FALSE(script_missing_from_snapshot(with_entrypoint({"python3", "../../x.py"}), files, root.path, "src"));

  const auto typo = script_missing_from_snapshot(with_entrypoint({"python3", "trian.py"}), files, root.path, "src");
  REQUIRE(typo);
  CHECK(*typo == "the entrypoint runs trian.py, which is not in the code snapshot of " + root.path.string() +
                     " (trials start in its src/): did you mean train.py?");
  const auto nested = script_missing_from_snapshot(shell("python3 src/trian.py --x 1"), files, root.path, "");
  REQUIRE(nested);
  CHECK(*nested == "the entrypoint runs src/trian.py, which is not in the code snapshot of " + root.path.string() +
                       ": did you mean src/train.py?");
  const auto unlike = script_missing_from_snapshot(with_entrypoint({"bash", "launch.sh"}), files, root.path, "");
  REQUIRE(unlike);
  CHECK(*unlike == "the entrypoint runs launch.sh, which is not in the code snapshot of " + root.path.string() +
                       ": fix the entrypoint, or add the file to the code");

  // On disk but not in the snapshot (git ignores it): said so, with the fix.
  std::ofstream(root.path / "ignored.py") << "print(1)\n";
  const auto ignored = script_missing_from_snapshot(with_entrypoint({"python3", "ignored.py"}), files, root.path, "");
  REQUIRE(ignored);
  CHECK(*ignored == "the entrypoint runs ignored.py, which the code snapshot of " + root.path.string() +
                        " leaves out: " + (root.path / "ignored.py").string() +
                        " exists but git ignores it or .dlxignore excludes it (dlx copies what git ls-files lists and "
                        ".dlxignore keeps: git add it, or change the ignore file)");
}

TEST_CASE("without a code snapshot a script missing now is a note, with a guess", "[plugin][entrypoint]") {
  dlx::testing::TempDir start;
  std::ofstream(start.path / "train.py") << "print(1)\n";
  std::ofstream(start.path / "notes.txt") << "x\n";
  CHECK_FALSE(script_missing_from(with_entrypoint({"python3", "train.py"}), start.path));
  const auto note = script_missing_from(with_entrypoint({"python3", "trian.py"}), start.path);
  REQUIRE(note);
  CHECK(*note == "the entrypoint runs trian.py, which is not in " + start.path.string() +
                     " now, where the trials start and run the files as they are then (no code snapshot): did you "
                     "mean train.py?");
  const auto other = script_missing_from(with_entrypoint({"sh", "make_data.sh"}), start.path);
  REQUIRE(other);
  CHECK_THAT(*other, Catch::EndsWith(": unless the job makes it first, every trial will fail to find it"));
  CHECK(script_missing_from(with_entrypoint({"python3", "missing/dir/x.py"}), start.path).has_value());
}

TEST_CASE("a script run as a program that the snapshot holds without its executable bit is refused",
          "[plugin][entrypoint]") {
  const std::map<std::string, mode_t> modes{{"train.py", 0644}, {"run.sh", 0755}, {"src/run.sh", 0640},
                                            {"owner-only.sh", 0700}};
  const auto mode_of = [&](const std::string& path) -> std::optional<mode_t> {
    const auto found = modes.find(path);
    return found == modes.end() ? std::nullopt : std::optional(found->second);
  };
  const auto refusal = script_not_executable_in_snapshot(with_entrypoint({"./train.py", "--lr", "0.1"}), "", mode_of);
  REQUIRE(refusal);
  CHECK(*refusal == "the entrypoint runs ./train.py as a program, but the code snapshot's train.py is not executable "
                    "(mode 0644), so every trial would fail with \"Permission denied\": name its interpreter first "
                    "(entrypoint: [python3, train.py]), or make it executable (chmod +x, and git "
                    "add it: git keeps the bit)");
  // Under the start directory, from a shell string.
  const auto nested = script_not_executable_in_snapshot(shell("./run.sh --fast"), "src", mode_of);
  REQUIRE(nested);
  CHECK_THAT(*nested, Catch::StartsWith("the entrypoint runs ./run.sh as a program, but the code snapshot's "
                                        "src/run.sh is not executable (mode 0640)"));
  CHECK_THAT(*nested, Catch::Contains("name its interpreter first (entrypoint: [bash, run.sh])"));
  const auto other = script_not_executable_in_snapshot(with_entrypoint({"./train"}), "", [](const std::string&) {
    return std::optional<mode_t>(0600);
  });
  REQUIRE(other);
  CHECK_THAT(*other, Catch::Contains("name its interpreter first (entrypoint: [INTERPRETER, train])"));
  // Executable (by its owner, who runs the trials), after an interpreter, not a regular file of
  // the snapshot (a link, or absent: script_missing_from_snapshot's), or a program from PATH: fine.
  CHECK_FALSE(script_not_executable_in_snapshot(with_entrypoint({"./run.sh"}), "", mode_of));
  CHECK_FALSE(script_not_executable_in_snapshot(with_entrypoint({"./owner-only.sh"}), "", mode_of));
  CHECK_FALSE(script_not_executable_in_snapshot(with_entrypoint({"python3", "train.py"}), "", mode_of));
  CHECK_FALSE(script_not_executable_in_snapshot(shell("bash src/run.sh"), "", mode_of));
  CHECK_FALSE(script_not_executable_in_snapshot(with_entrypoint({"./linked.sh"}), "", mode_of));
  CHECK_FALSE(script_not_executable_in_snapshot(with_entrypoint({"train"}), "", mode_of));
}

TEST_CASE("without a code snapshot a script run as a program without its executable bit is a note",
          "[plugin][entrypoint]") {
  dlx::testing::TempDir start;
  std::ofstream(start.path / "train.py") << "print(1)\n";
  std::ofstream(start.path / "run.sh") << "#!/bin/sh\n";
  std::filesystem::permissions(start.path / "train.py", std::filesystem::perms(0644));
  std::filesystem::permissions(start.path / "run.sh", std::filesystem::perms(0755));
  const auto note = script_not_executable_in(with_entrypoint({"./train.py"}), start.path);
  REQUIRE(note);
  CHECK(*note == "the entrypoint runs ./train.py as a program, but " + (start.path / "train.py").string() +
                     " is not executable (mode 0644), so every trial would fail with \"Permission denied\": name its "
                     "interpreter first (entrypoint: [python3, train.py]), or make it executable "
                     "(chmod +x: with no code snapshot the trials run the file as it is when they start)");
  CHECK_FALSE(script_not_executable_in(with_entrypoint({"./run.sh"}), start.path));
  CHECK_FALSE(script_not_executable_in(with_entrypoint({"python3", "train.py"}), start.path));
  CHECK_FALSE(script_not_executable_in(with_entrypoint({"./missing.sh"}), start.path));
}
