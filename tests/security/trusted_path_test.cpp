// SPDX-License-Identifier: Apache-2.0
// The ownership rule (common/trusted_path.hpp) and what is built on it: experiment directories
// created and read only as the user's own, files read without following links or blocking, the
// layout's exact modes whatever the umask, and deletions that never leave the experiment.
// Directories of "other users" are made with chown, so these cases need root (CI runs as root);
// as anyone else they are skipped with a message. The attacks themselves, by real users on the
// local cluster, are in tests/security/*.sh and tests/cluster/security_*_test.sh.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "dlx/checkpoint/retention.hpp"
#include "dlx/common/directories.hpp"
#include "dlx/common/durable_file.hpp"
#include "dlx/common/trusted_path.hpp"
#include "dlx/config/parse.hpp"
#include "dlx/store/create_experiment_dir.hpp"
#include "dlx/store/experiment_layout.hpp"
#include "dlx/store/trusted_experiment.hpp"
#include "dlx/store/user_directories.hpp"

namespace fs = std::filesystem;

namespace {

// Uids with no passwd entry: messages name them "uid N".
constexpr uid_t kAlice = 41001;
constexpr uid_t kMallory = 41002;

bool root() { return ::geteuid() == 0; }

// A scratch directory owned by root, mode 0755, removed afterwards.
class Scratch {
 public:
  Scratch() {
    std::string pattern = (fs::temp_directory_path() / "dlx-trust-XXXXXX").string();
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    path_ = pattern;
    ::chmod(path_.c_str(), 0755);
  }
  ~Scratch() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

fs::path make_dir(const fs::path& path, uid_t owner, mode_t mode) {
  REQUIRE(::mkdir(path.c_str(), 0700) == 0);
  REQUIRE(::chown(path.c_str(), owner, owner) == 0);
  REQUIRE(::chmod(path.c_str(), mode) == 0);
  return path;
}

void make_file(const fs::path& path, uid_t owner, mode_t mode, const std::string& text = "name: x\n") {
  dlx::write_file_durably(path, text, mode);
  REQUIRE(::chown(path.c_str(), owner, owner) == 0);
}

// <scratch>/storage (1777, root) / alice (alice 0750) / exp (alice 0750) with a snapshot.
struct Storage {
  Scratch scratch;
  fs::path root = make_dir(scratch.path() / "storage", 0, 01777);
  fs::path user = make_dir(root / "alice", kAlice, 0750);
  fs::path experiment = make_dir(user / "exp", kAlice, 0750);
  Storage() { make_file(experiment / "experiment.yaml", kAlice, 0640); }
};

std::string refusal(const fs::path& directory, uid_t owner) {
  try {
    dlx::open_trusted_directory(directory, owner);
  } catch (const dlx::Error& e) {
    return e.what();
  }
  return "accepted";
}

// Runs `body` with the process umask set to `mask`, restoring it afterwards.
template <typename Body>
void with_umask(mode_t mask, Body body) {
  const mode_t saved = ::umask(mask);
  try {
    body();
  } catch (...) {
    ::umask(saved);
    throw;
  }
  ::umask(saved);
}

// One character of a YAML double-quoted scalar.
std::string fmt_escape(char c) {
  static const char* hex = "0123456789abcdef";
  const auto byte = static_cast<unsigned char>(c);
  if (c == '"' || c == '\\') return std::string("\\") + c;
  if (byte < 0x20 || byte == 0x7f) return std::string("\\x") + hex[byte >> 4] + hex[byte & 15];
  return std::string(1, c);
}

mode_t mode_of(const fs::path& path) {
  struct stat status {};
  REQUIRE(::lstat(path.c_str(), &status) == 0);
  return status.st_mode & 07777;
}

}  // namespace

TEST_CASE("an experiment directory that is its user's own, under root and sticky directories, is trusted",
          "[trusted_path]") {
  if (!root()) {
    WARN("skipped: " "needs root to make directories of other users");
    return;
  }
  Storage storage;
  CHECK(refusal(storage.experiment, kAlice) == "accepted");
  // The same through a symbolic link that sits in a directory only root can change.
  const fs::path link = storage.scratch.path() / "shared";
  REQUIRE(::symlink(storage.root.c_str(), link.c_str()) == 0);
  CHECK(refusal(link / "alice" / "exp", kAlice) == "accepted");
  // A relative link and '..' on the way are resolved by the walk, not by the kernel.
  const fs::path relative = storage.scratch.path() / "relative";
  REQUIRE(::symlink("storage/alice/../alice", relative.c_str()) == 0);
  CHECK(refusal(relative / "exp", kAlice) == "accepted");
}

TEST_CASE("a user directory another user made first is refused (storage-root squatting)", "[trusted_path]") {
  if (!root()) {
    WARN("skipped: " "needs root to make directories of other users");
    return;
  }
  Scratch scratch;
  const fs::path storage = make_dir(scratch.path() / "storage", 0, 01777);
  // mallory: mkdir -m 0777 <root>/alice before alice's first submission.
  const fs::path squatted = make_dir(storage / "alice", kMallory, 0777);
  try {
    dlx::store::create_experiment_dir(storage, "alice", kAlice, "exp");
    FAIL("created an experiment in a directory mallory owns");
  } catch (const dlx::UntrustedPathError& e) {
    CHECK_THAT(e.what(), Catch::Contains(squatted.string() + " is owned by uid 41002, not by uid 41001"));
    CHECK_THAT(e.what(), Catch::Contains("have it removed"));
  }
  CHECK(fs::is_empty(squatted));
  // Owned by mallory but not writable by others: still hers to swap.
  REQUIRE(::chmod(squatted.c_str(), 0755) == 0);
  CHECK_THAT(refusal(squatted, kAlice), Catch::Contains("is owned by uid 41002"));
}

TEST_CASE("a symbolic link in place of the user or experiment directory is refused", "[trusted_path]") {
  if (!root()) {
    WARN("skipped: " "needs root to make directories of other users");
    return;
  }
  Scratch scratch;
  const fs::path storage = make_dir(scratch.path() / "storage", 0, 01777);
  const fs::path elsewhere = make_dir(scratch.path() / "mallory-dir", kMallory, 0777);
  const fs::path user = storage / "alice";
  REQUIRE(::symlink(elsewhere.c_str(), user.c_str()) == 0);
  REQUIRE(::lchown(user.c_str(), kMallory, kMallory) == 0);
  SECTION("made by another user in the shared storage root") {
    CHECK_THROWS_WITH(dlx::store::create_experiment_dir(storage, "alice", kAlice, "exp"),
                      Catch::Contains(user.string() + " is a symbolic link"));
    CHECK_THAT(refusal(user / "exp", kAlice),
               Catch::Contains(user.string() + " is owned by uid 41002, not by uid 41001 or root, in a "
                                               "directory every user can write to"));
  }
  SECTION("made by the user: still not a real directory") {
    REQUIRE(::lchown(user.c_str(), kAlice, kAlice) == 0);
    CHECK_THROWS_WITH(dlx::store::create_experiment_dir(storage, "alice", kAlice, "exp"),
                      Catch::Contains(user.string() + " is a symbolic link"));
    CHECK_THAT(refusal(user, kAlice), Catch::Contains(user.string() + " is a symbolic link"));
  }
  CHECK(fs::is_empty(elsewhere));
}

TEST_CASE("a directory on the way that others may change is refused", "[trusted_path]") {
  if (!root()) {
    WARN("skipped: " "needs root to make directories of other users");
    return;
  }
  Storage storage;
  SECTION("storage root writable by all without the sticky bit") {
    REQUIRE(::chmod(storage.root.c_str(), 0777) == 0);
    CHECK_THAT(refusal(storage.experiment, kAlice),
               Catch::Contains(storage.root.string() + " (mode 0777) is writable by its group and all users without "
                                                       "the sticky bit"));
  }
  SECTION("an ancestor owned by another user") {
    REQUIRE(::chown(storage.root.c_str(), kMallory, kMallory) == 0);
    REQUIRE(::chmod(storage.root.c_str(), 0755) == 0);
    CHECK_THAT(refusal(storage.experiment, kAlice),
               Catch::Contains(storage.root.string() + " is owned by uid 41002, not by uid 41001 or root"));
  }
  SECTION("the experiment directory writable by its group") {
    REQUIRE(::chmod(storage.experiment.c_str(), 0770) == 0);
    CHECK_THAT(refusal(storage.experiment, kAlice),
               Catch::Contains(storage.experiment.string() + " (mode 0770) is writable by its group"));
  }
  SECTION("the experiment directory owned by root (not the user's)") {
    REQUIRE(::chown(storage.experiment.c_str(), 0, 0) == 0);
    CHECK_THAT(refusal(storage.experiment, kAlice), Catch::Contains("is owned by root, not by uid 41001"));
  }
  SECTION("a link another user made in a sticky directory") {
    const fs::path link = storage.root / "alias";
    REQUIRE(::symlink(storage.user.c_str(), link.c_str()) == 0);
    REQUIRE(::lchown(link.c_str(), kMallory, kMallory) == 0);
    CHECK_THAT(refusal(link / "exp", kAlice), Catch::Contains(link.string() + " is owned by uid 41002"));
  }
  SECTION("a loop of links") {
    const fs::path a = storage.scratch.path() / "a", b = storage.scratch.path() / "b";
    REQUIRE(::symlink(b.c_str(), a.c_str()) == 0);
    REQUIRE(::symlink(a.c_str(), b.c_str()) == 0);
    CHECK_THROWS_WITH(dlx::open_trusted_directory(a / "exp", kAlice),
                      Catch::Contains("Too many levels of symbolic links"));
  }
  SECTION("a relative path") {
    CHECK_THAT(refusal("storage/alice/exp", kAlice), Catch::Contains("not an absolute path"));
  }
}

TEST_CASE("the snapshot is read only as a regular file of the user's, never blocking", "[trusted_path]") {
  if (!root()) {
    WARN("skipped: " "needs root to make files of other users");
    return;
  }
  Storage storage;
  const fs::path snapshot = storage.experiment / "experiment.yaml";
  CHECK(dlx::store::read_trusted_experiment_file(storage.experiment, "experiment.yaml", kAlice, 1024) ==
        "name: x\n");
  SECTION("a FIFO (a job script's mkfifo): refused at once, not waited on") {
    fs::remove(snapshot);
    REQUIRE(::mkfifo(snapshot.c_str(), 0640) == 0);
    REQUIRE(::chown(snapshot.c_str(), kAlice, kAlice) == 0);
    const auto start = std::chrono::steady_clock::now();
    CHECK_THROWS_WITH(dlx::store::read_trusted_experiment_file(storage.experiment, "experiment.yaml", kAlice, 1024),
                      Catch::Contains(snapshot.string() + " is a FIFO, not a regular file"));
    // A blocking open would never return: reaching this line is the check.
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(30));
  }
  SECTION("a symbolic link to a file elsewhere") {
    const fs::path other = storage.scratch.path() / "mallory.yaml";
    make_file(other, kAlice, 0644, "name: mallory\n");
    fs::remove(snapshot);
    REQUIRE(::symlink(other.c_str(), snapshot.c_str()) == 0);
    CHECK_THROWS_WITH(dlx::store::read_trusted_experiment_file(storage.experiment, "experiment.yaml", kAlice, 1024),
                      Catch::Contains(snapshot.string() + " is a symbolic link"));
  }
  SECTION("another user's file, or one writable by others") {
    REQUIRE(::chown(snapshot.c_str(), kMallory, kMallory) == 0);
    CHECK_THROWS_WITH(dlx::store::read_trusted_experiment_file(storage.experiment, "experiment.yaml", kAlice, 1024),
                      Catch::Contains(snapshot.string() + " is owned by uid 41002, not by uid 41001"));
    REQUIRE(::chown(snapshot.c_str(), kAlice, kAlice) == 0);
    REQUIRE(::chmod(snapshot.c_str(), 0666) == 0);
    CHECK_THROWS_WITH(dlx::store::read_trusted_experiment_file(storage.experiment, "experiment.yaml", kAlice, 1024),
                      Catch::Contains("(mode 0666) is writable by its group and all users"));
  }
  SECTION("over the size limit") {
    make_file(snapshot, kAlice, 0640, std::string(2048, '#'));
    CHECK_THROWS_WITH(dlx::store::read_trusted_experiment_file(storage.experiment, "experiment.yaml", kAlice, 1024),
                      Catch::Contains("larger than the 1024 byte limit"));
  }
}

TEST_CASE("read_small_file refuses a FIFO, a directory and a device without blocking", "[trusted_path]") {
  Scratch scratch;
  const fs::path fifo = scratch.path() / "exp.yaml";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK_THROWS_WITH(dlx::read_small_file(fifo, 1024),
                    Catch::Equals("cannot read " + fifo.string() + ": it is a FIFO, not a regular file"));
  CHECK_THROWS_WITH(dlx::read_small_file(scratch.path(), 1024), Catch::Contains("it is a directory"));
  CHECK_THROWS_WITH(dlx::read_small_file("/dev/null", 1024), Catch::Contains("it is a character device"));
}

TEST_CASE("what dlx creates has the layout's modes whatever the umask", "[trusted_path]") {
  for (const mode_t mask : {mode_t{0}, mode_t{002}, mode_t{077}}) {
    DYNAMIC_SECTION("umask " << std::oct << mask) {
      Scratch scratch;
      const fs::path storage = make_dir(scratch.path() / "storage", ::geteuid(), 01777);
      with_umask(mask, [&] {
        const auto experiment = dlx::store::create_experiment_dir(storage, "me", ::geteuid(), "exp");
        CHECK(mode_of(storage / "me") == 0750);
        CHECK(mode_of(experiment) == 0750);
        CHECK(mode_of(experiment / "trials") == 0750);
        CHECK(mode_of(dlx::store::make_checkpoint_dir(experiment, 3, ::geteuid())) == 0750);
        CHECK(mode_of(experiment / "trials" / "3") == 0750);
        dlx::store::link_job(experiment, "42", ::geteuid());
        CHECK(mode_of(storage / "me" / ".jobs") == 0750);
        CHECK(fs::read_symlink(storage / "me" / ".jobs" / "42") == experiment);
        dlx::write_file_durably(experiment / "experiment.yaml", "name: exp\n");
        CHECK(mode_of(experiment / "experiment.yaml") == 0640);
        dlx::create_directories_with_mode(experiment / "trials" / "7" / "checkpoints");
        CHECK(mode_of(experiment / "trials" / "7") == 0750);
        CHECK(mode_of(experiment / "trials" / "7" / "checkpoints") == 0750);
      });
    }
  }
}

TEST_CASE("a second submission of the same name gets a directory of its own", "[trusted_path]") {
  Scratch scratch;
  const fs::path storage = make_dir(scratch.path() / "storage", ::geteuid(), 01777);
  const auto first = dlx::store::create_experiment_dir(storage, "me", ::geteuid(), "exp");
  const auto second = dlx::store::create_experiment_dir(storage, "me", ::geteuid(), "exp");
  CHECK(first.filename() == "exp");
  CHECK(second.filename() == "exp.2");
}

TEST_CASE("listing and deleting never follow a link out of the experiment", "[trusted_path]") {
  Scratch scratch;
  const fs::path experiment = scratch.path() / "exp";
  const fs::path victim = scratch.path() / "victim";
  dlx::create_directories_with_mode(experiment / "trials" / "1" / "checkpoints");
  dlx::create_directories_with_mode(victim / "checkpoints");
  dlx::write_file_durably(victim / "checkpoints" / "step-5.h5", "theirs");
  // trials/0 -> the victim's trial directory; checkpoints/step-9.h5 -> the victim's checkpoint.
  REQUIRE(::symlink(victim.c_str(), (experiment / "trials" / "0").c_str()) == 0);
  const fs::path own_checkpoints = experiment / "trials" / "1" / "checkpoints";
  REQUIRE(::symlink((victim / "checkpoints" / "step-5.h5").c_str(), (own_checkpoints / "step-9.h5").c_str()) == 0);
  REQUIRE(::mkfifo((own_checkpoints / "step-10.h5").c_str(), 0600) == 0);
  dlx::write_file_durably(own_checkpoints / "step-4.h5", "mine");

  CHECK(dlx::store::trial_ids_on_disk(experiment) == std::vector<int>{1});
  // Listed for the reader to judge, which refuses the link and the FIFO with the reason.
  const auto scanned = dlx::checkpoint::scan_checkpoints(own_checkpoints, {}, "");
  REQUIRE(scanned.size() == 3);
  CHECK(scanned[0].step == 4);
  CHECK(scanned[1].step == 9);
  CHECK_FALSE(scanned[1].valid);
  CHECK_THAT(scanned[1].problem, Catch::Contains("symbolic link"));
  CHECK(scanned[2].step == 10);
  CHECK_FALSE(scanned[2].valid);
  CHECK_THAT(scanned[2].problem, Catch::Contains("FIFO"));

  CHECK_THROWS_WITH(dlx::store::remove_file_below(experiment, experiment / "trials" / "0" / "checkpoints" / "step-5.h5"),
                    Catch::Contains("is not a directory of the experiment (a symbolic link?)"));
  CHECK_THROWS_WITH(dlx::store::remove_file_below(experiment, victim / "checkpoints" / "step-5.h5"),
                    Catch::Contains("is not inside the experiment directory"));
  CHECK(dlx::store::remove_file_below(experiment, own_checkpoints / "step-9.h5"));  // the link itself
  CHECK(fs::exists(victim / "checkpoints" / "step-5.h5"));
  CHECK(dlx::store::remove_file_below(experiment, own_checkpoints / "step-4.h5"));
  CHECK_FALSE(dlx::store::remove_file_below(experiment, own_checkpoints / "step-4.h5"));  // already gone
}

TEST_CASE("dlx storage: an administrator makes users' directories, and squatted ones are reported, never changed",
          "[trusted_path][storage]") {
  if (!root()) {
    WARN("skipped: needs root to hand directories to users");
    return;
  }
  Scratch scratch;
  const fs::path storage = make_dir(scratch.path() / "storage", 0, 0755);
  // `nobody` exists on every Debian system; `daemon` plays the squatter.
  CHECK(dlx::store::add_user_directory(storage, "nobody"));
  struct stat status {};
  REQUIRE(::lstat((storage / "nobody").c_str(), &status) == 0);
  CHECK(status.st_uid == 65534);
  CHECK((status.st_mode & 07777) == 0750);
  CHECK_FALSE(dlx::store::add_user_directory(storage, "nobody"));  // already theirs: left alone
  CHECK(dlx::store::check_user_directories(storage).empty());

  const fs::path squatted = make_dir(storage / "bin", 1, 0777);  // made by `daemon` (uid 1) in bin's name
  CHECK_THROWS_WITH(dlx::store::add_user_directory(storage, "bin"),
                    Catch::Contains(squatted.string() + " already exists and is not bin's own directory: it is "
                                                        "owned by daemon"));
  REQUIRE(::lstat(squatted.c_str(), &status) == 0);
  CHECK(status.st_uid == 1);  // reported, not taken over
  const auto problems = dlx::store::check_user_directories(storage);
  REQUIRE(problems.size() == 1);
  CHECK(problems.front().user == "bin");
  CHECK(problems.front().problem == "owned by daemon");
  CHECK_THROWS_WITH(dlx::store::add_user_directory(storage, "no-such-user-dlx"), Catch::Contains("no such user"));
}

TEST_CASE("hostile experiment names never leave the user's directory", "[trusted_path][names]") {
  Scratch scratch;
  const fs::path storage = make_dir(scratch.path() / "storage", ::geteuid(), 01777);
  // The names the audit tried, and relatives: each is refused by the parser with its position,
  // and (had one got through) by the store before mkdirat.
  const std::vector<std::string> hostile = {
      "..", ".", "", "../victim", "a/b", "/etc", ".jobs", ".hidden", "x/..", std::string("a\0b", 3),
      "a\nb", "\x1b]0;owned\x07", std::string(300, 'a')};
  REQUIRE(hostile.size() == 13);
  const auto yaml_named = [](const std::string& name) {
    std::string yaml = "name: \"";
    for (const char c : name) yaml += fmt_escape(c);
    return yaml + "\"\nentrypoint: x\nsearcher: {name: single, metric: loss}\n";
  };
  // Free text, as Determined allows: the directory gets a safe name made from it (issue 20).
  const std::vector<std::pair<std::string, std::string>> free_text = {
      {"$(touch pwned)", "touch-pwned"}, {"`touch pwned`", "touch-pwned"}, {"a b", "a-b"}, {"a;b", "a-b"}};
  for (const auto& [text, safe] : free_text) {
    CAPTURE(text);
    CHECK(dlx::config::parse_experiment(yaml_named(text), "hostile.yaml").name == safe);
  }
  for (const auto& name : hostile) {
    CAPTURE(name);
    CHECK_THROWS_WITH(dlx::config::parse_experiment(yaml_named(name), "hostile.yaml"),
                      Catch::Contains("hostile.yaml:1:7: name: "));
    if (name.empty() || name.front() == '.' || name.find('/') != std::string::npos ||
        name.find('\0') != std::string::npos) {
      CHECK_THROWS_WITH(dlx::store::create_experiment_dir(storage, "me", ::geteuid(), name),
                        Catch::Contains("cannot name a directory in " + storage.string()));
    }
  }
  // Nothing was created beside the user's own directory.
  CHECK(dlx::store::check_user_directories(storage).empty());
  std::vector<std::string> entries;
  for (const auto& entry : fs::directory_iterator(storage)) entries.push_back(entry.path().filename().string());
  CHECK(entries.empty());
}
