// SPDX-License-Identifier: Apache-2.0
// A crash on a file or module the code snapshot left out (launch/snapshot_gap.hpp): the names
// read from real error lines (Python, numpy, h5py), then the comparison of a snapshot with its
// source on real directories, and the decision that fails such a trial at once.
#include <catch2/catch.hpp>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "dlx/launch/snapshot_gap.hpp"
#include "dlx/launch/trial_outcome.hpp"
#include "process_helpers.hpp"

using dlx::launch::MissingName;
using dlx::launch::missing_name;
using dlx::launch::snapshot_gap;
using dlx::launch::SnapshotOrigin;
using dlx::test::TempDir;
namespace fs = std::filesystem;

namespace {

void make_file(const fs::path& path) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << "x\n";
}

// A source tree and its snapshot, made "now" (files written before it are older).
struct Trees {
  TempDir dir{"snapshot-gap"};
  SnapshotOrigin origin;
  fs::path copy;

  Trees() {
    origin.source = dir.path() / "project";
    origin.snapshot = dir.path() / "experiment" / "code";
    origin.git = true;
    origin.created_unix = std::time(nullptr) + 60;
    copy = dir.path() / "node-local" / "code-7-0-0-0";
    fs::create_directories(origin.snapshot);
    fs::create_directories(copy);
    for (const auto* file : {"train.py", "src/train.py", "exp/run.py"}) {
      make_file(origin.source / file);
      make_file(origin.snapshot / file);
    }
  }
  std::optional<std::string> gap(const std::string& line, const std::vector<std::string>& command = {}) const {
    return snapshot_gap(line, origin, copy, command);
  }
};

std::string not_found(const std::string& name) {
  return "FileNotFoundError: [Errno 2] No such file or directory: '" + name + "'";
}

}  // namespace

TEST_CASE("snapshot gap: the name an error line says is missing", "[launch]") {
  using Kind = MissingName::Kind;
  const auto name = [](const char* line) { return missing_name(line); };
  REQUIRE(name("FileNotFoundError: [Errno 2] No such file or directory: 'traindata.pt'"));
  CHECK(name("FileNotFoundError: [Errno 2] No such file or directory: 'traindata.pt'")->name == "traindata.pt");
  CHECK(name("FileNotFoundError: [Errno 2] No such file or directory: 'traindata.pt'")->kind == Kind::file);
  // repr() quotes a name holding a single quote with double quotes.
  CHECK(name("FileNotFoundError: [Errno 2] No such file or directory: \"it's.csv\"")->name == "it's.csv");
  // os.rename and the like name two: the first is the one that is missing.
  CHECK(name("FileNotFoundError: [Errno 2] No such file or directory: 'a.txt' -> 'b.txt'")->name == "a.txt");
  CHECK(name("OSError: data.csv not found.")->name == "data.csv");
  CHECK(name("FileNotFoundError: data/train.csv not found.")->name == "data/train.csv");
  CHECK(name("FileNotFoundError: [Errno 2] Unable to synchronously open file (unable to open file: name = "
             "'data.h5', errno = 2, error message = 'No such file or directory', flags = 0, o_flags = 0)")
            ->name == "data.h5");
  const auto module = name("ModuleNotFoundError: No module named 'models.resnet'");
  REQUIRE(module);
  CHECK(module->kind == Kind::module);
  CHECK(module->name == "models.resnet");
  // Not a missing name, or one that cannot be read back exactly: left to the usual crash rules.
  CHECK_FALSE(name("ValueError: No such file or directory: 'x'"));
  CHECK_FALSE(name("FileNotFoundError: [Errno 2] No such file or directory: 'C:\\\\x'"));
  CHECK_FALSE(name("FileNotFoundError: [Errno 2] No such file or directory: ''"));
  CHECK_FALSE(name("OSError: [Errno 28] No space left on device"));
  CHECK_FALSE(name("RuntimeError: Dataset not found. You can use download=True to download it"));
  CHECK_FALSE(name("exit 1"));
  CHECK_FALSE(name(""));
}

TEST_CASE("snapshot gap: a file git ignores", "[launch]") {
  Trees trees;
  make_file(trees.origin.source / "traindata.pt");
  const auto gap = trees.gap(not_found("traindata.pt"));
  REQUIRE(gap);
  CHECK(*gap == "'traindata.pt' is not in the experiment's code snapshot, but is in " + trees.origin.source.string() +
                ": .gitignore or .dlxignore excludes it (`git check-ignore -v traindata.pt` there names the rule); "
                "un-ignore it (`git add -f traindata.pt`, or a `!traindata.pt` line in .gitignore), or read it from "
                "an absolute path or stage it with `data: stage:` (DLX_DATA_DIR), and submit again");
  // numpy's and h5py's words for it, and the path inside the copy the trainer built from __file__.
  CHECK(trees.gap("OSError: traindata.pt not found.") == gap);
  const auto in_copy = (trees.copy / "traindata.pt").string();
  CHECK(trees.gap(not_found(in_copy)) == "'" + in_copy + "' is not in the experiment's code snapshot, but traindata.pt" +
                                             gap->substr(gap->find(" is in ")));

  SECTION("outside git only .dlxignore leaves files out") {
    trees.origin.git = false;
    const auto plain = trees.gap(not_found("traindata.pt"));
    REQUIRE(plain);
    CHECK(plain->ends_with("but is in " + trees.origin.source.string() +
                           ": .dlxignore excludes it; remove its rule, and submit again"));
  }
  SECTION("a file newer than the snapshot was made after the submission") {
    trees.origin.created_unix = 1000;
    const auto later = trees.gap(not_found("traindata.pt"));
    REQUIRE(later);
    CHECK(later->ends_with(": it was made or changed after the submission (or .gitignore or .dlxignore excludes "
                           "it); submit again"));
  }
}

TEST_CASE("snapshot gap: the part of a path that was left out", "[launch]") {
  Trees trees;
  make_file(trees.origin.source / "data/raw/train.csv");
  const auto gap = trees.gap(not_found("data/raw/train.csv"));
  REQUIRE(gap);
  CHECK(gap->starts_with("'data/raw/train.csv' is not in the experiment's code snapshot, but data/ is in "));
  CHECK(gap->find("`git check-ignore -v data/` there names the rule") != std::string::npos);
  // Trials that start in a subdirectory (the submit directory below the repository's top).
  trees.origin.workdir = "exp";
  make_file(trees.origin.source / "exp/config.yaml");
  const auto below = trees.gap(not_found("config.yaml"));
  REQUIRE(below);
  CHECK(below->find("but exp/config.yaml is in ") != std::string::npos);
  CHECK(trees.gap(not_found("../data/raw/train.csv"))->find("but data/ is in ") != std::string::npos);
}

TEST_CASE("snapshot gap: a path that leads out of the copy", "[launch]") {
  Trees trees;
  make_file(trees.dir.path() / "datasets/mnist.npz");
  const auto gap = trees.gap(not_found("../datasets/mnist.npz"));
  REQUIRE(gap);
  CHECK(*gap == "'../datasets/mnist.npz' leads out of the copy of the code snapshot that the trainer runs in, so "
                "it does not reach " + (trees.dir.path() / "datasets/mnist.npz").string() + ", which it names from " +
                trees.origin.source.string() + ": give the absolute path, or stage the data with `data: stage:` "
                "(DLX_DATA_DIR), and submit again");
  CHECK_FALSE(trees.gap(not_found("../datasets/cifar.npz")));  // not there either: not dlx's to explain
}

TEST_CASE("snapshot gap: a module", "[launch]") {
  Trees trees;
  make_file(trees.origin.source / "utils.py");
  const auto gap = trees.gap("ModuleNotFoundError: No module named 'utils'", {"/usr/bin/python3", "train.py"});
  REQUIRE(gap);
  CHECK(gap->starts_with("the module 'utils' is not in the experiment's code snapshot, but utils.py is in "));
  CHECK(gap->ends_with("(`git add -f utils.py`, or a `!utils.py` line in .gitignore), and submit again"));
  // A package beside the script Python runs (sys.path[0]), named in a shell entrypoint.
  make_file(trees.origin.source / "src/models/__init__.py");
  const auto package = trees.gap("ModuleNotFoundError: No module named 'models.resnet'",
                                 {"/bin/sh", "-c", "python3 src/train.py --epochs 3"});
  REQUIRE(package);
  CHECK(package->find("but src/models/ is in ") != std::string::npos);
  // A submodule the snapshot skips says so, and a package the source lacks too (pip's) is no gap.
  make_file(trees.origin.source / "vendor/lib/__init__.py");
  trees.origin.skipped.emplace_back("vendor", "git submodule or nested repository: its files are not copied");
  const auto submodule = trees.gap("ModuleNotFoundError: No module named 'vendor.lib'", {"python3", "train.py"});
  REQUIRE(submodule);
  CHECK(submodule->ends_with("but vendor/ is in " + trees.origin.source.string() +
                             ": vendor: git submodule or nested repository: its files are not copied; vendor its "
                             "files into the tree (or install the package where the trials' Python finds it), and "
                             "submit again"));
  CHECK_FALSE(trees.gap("ModuleNotFoundError: No module named 'torchvision'", {"python3", "train.py"}));
}

TEST_CASE("snapshot gap: what is not one", "[launch]") {
  Trees trees;
  // In the snapshot (the crash is about something else), in neither tree, outside both trees.
  CHECK_FALSE(trees.gap(not_found("train.py")));
  CHECK_FALSE(trees.gap(not_found("checkpoint.pth.tar")));
  make_file(trees.dir.path() / "elsewhere.txt");
  CHECK_FALSE(trees.gap(not_found((trees.dir.path() / "elsewhere.txt").string())));
  CHECK_FALSE(trees.gap("ZeroDivisionError: division by zero"));
  // No source recorded (an older code.json): nothing to compare with.
  make_file(trees.origin.source / "traindata.pt");
  trees.origin.source.clear();
  CHECK_FALSE(trees.gap(not_found("traindata.pt")));
}

TEST_CASE("snapshot gap: the trial fails at once with it", "[launch]") {
  using dlx::launch::ExitDecision;
  using dlx::launch::TrialCrash;
  dlx::record::TrialRecord running;
  TrialCrash crash{.status = 1, .where = "", .error = "exit 1: FileNotFoundError: [Errno 2] No such file or "
                                                       "directory: 'traindata.pt'",
                   .snapshot_gap = "'traindata.pt' is not in the experiment's code snapshot"};
  const auto decision = dlx::launch::decide_exit(crash, running, 5);
  CHECK(decision.crash);
  CHECK_FALSE(decision.requeue);
  CHECK(decision.final == ExitDecision::Final::snapshot_gap);
  CHECK(decision.status == 1);
  CHECK(dlx::launch::crash_stop_reason(crash, decision, 1, 5) ==
        "failed: exit 1: FileNotFoundError: [Errno 2] No such file or directory: 'traindata.pt' ('traindata.pt' is "
        "not in the experiment's code snapshot; trials run a copy of the snapshot, so a restart would fail alike: "
        "not restarted)");
  // Without the explanation the same crash is restarted.
  crash.snapshot_gap.clear();
  CHECK(dlx::launch::decide_exit(crash, running, 5).requeue);
}
