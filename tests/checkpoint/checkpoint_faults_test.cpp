// SPDX-License-Identifier: Apache-2.0
// Fault injection: a writer SIGKILLed at many points of a save, ENOSPC on a small tmpfs, a missing
// directory, a path through a file, permission denied. Each leaves the previous checkpoint
// loadable and, for errors, a CheckpointError naming the file and the errno.
#include <hdf5.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <thread>

#include <catch2/catch.hpp>

#include "checkpoint_samples.hpp"
#include "dlx/checkpoint/discovery.hpp"
#include "dlx/common/durable_file.hpp"
#include "test_support.hpp"

using namespace dlx::checkpoint;
using Catch::Matchers::Contains;
using dlx::checkpoint::testing::ScratchDir;

namespace {

// Saves step 1, 2, 3, ... until killed. Runs in a forked child: never returns.
[[noreturn]] void save_forever(const std::filesystem::path& dir) {
  try {
    for (std::int64_t step = 1;; ++step) {
      testing::SampleContent sample(step, std::size_t{1} << 20);
      save_checkpoint(sample.content(), checkpoint_path(dir, step));
    }
  } catch (...) {
  }
  ::_exit(3);
}

CheckpointError save_error(const CheckpointContent& content, const std::filesystem::path& path) {
  try {
    save_checkpoint(content, path);
  } catch (const CheckpointError& e) {
    return e;
  }
  FAIL("save_checkpoint did not fail: " << path);
  return CheckpointError("");
}

// A tmpfs mounted for the test's lifetime (root only); unmounted on every path out.
class SmallTmpfs {
 public:
  SmallTmpfs(const std::filesystem::path& where, const char* size) : where_(where) {
    std::filesystem::create_directories(where);
    std::string options = std::string("size=") + size;
    mounted_ = ::mount("tmpfs", where.c_str(), "tmpfs", 0, options.c_str()) == 0;
    if (!mounted_) error_ = errno;
  }
  ~SmallTmpfs() {
    if (mounted_) ::umount2(where_.c_str(), MNT_DETACH);
  }
  bool mounted() const { return mounted_; }
  int error() const { return error_; }

 private:
  std::filesystem::path where_;
  bool mounted_ = false;
  int error_ = 0;
};

}  // namespace

TEST_CASE("a writer killed at any point leaves every published checkpoint loadable",
          "[unit][checkpoint][faults]") {
  ScratchDir dir;
  testing::SampleContent first(0, 1000);
  save_checkpoint(first.content(), checkpoint_path(dir.path(), 0));
  for (int round = 0; round < 12; ++round) {
    pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) save_forever(dir.path());
    std::this_thread::sleep_for(std::chrono::microseconds(4000 * round + 300));
    ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
    REQUIRE(WIFSIGNALED(status));

    auto latest = find_latest_valid(dir.path(), {.experiment = "mnist-asha", .trial_id = 7});
    REQUIRE(latest.path);
    CHECK_NOTHROW(load_checkpoint(*latest.path));
    // Atomic publish: every final name is complete; only temporary names may be partial.
    for (const auto& skipped : latest.skipped) {
      INFO(skipped.path << ": " << skipped.reason);
      CHECK(dlx::is_temporary_name(skipped.path.filename().string()));
    }
    for (const auto& entry : std::filesystem::directory_iterator(dir.path()))
      if (dlx::is_temporary_name(entry.path().filename().string()))
        std::filesystem::remove(entry.path());
  }
}

TEST_CASE("ENOSPC: a clear error naming the file and the old checkpoint intact",
          "[unit][checkpoint][faults]") {
  if (::geteuid() != 0) {
    WARN("skipped: mounting a small tmpfs needs root (CI runs as root)");
    return;
  }
  ScratchDir dir;
  SmallTmpfs tmpfs(dir.path() / "small", "1m");
  if (!tmpfs.mounted()) {
    WARN("skipped: cannot mount a tmpfs here: " << std::strerror(tmpfs.error()));
    return;
  }
  auto ckpt = dir.path() / "small";
  testing::SampleContent small(1, 1000);
  save_checkpoint(small.content(), checkpoint_path(ckpt, 1));
  testing::SampleContent large(2, std::size_t{2} << 20);  // 8 MiB does not fit
  auto error = save_error(large.content(), checkpoint_path(ckpt, 2));
  CHECK(error.error_number() == ENOSPC);
  CHECK(H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL) == 0);  // nothing left open inside HDF5
  CHECK_THAT(error.what(), Contains("cannot save checkpoint " + checkpoint_path(ckpt, 2).string()));
  CHECK_THAT(error.what(), Contains("No space left on device"));
  CHECK(testing::file_names_in(ckpt) == std::vector<std::string>{"step-1.h5"});
  CHECK(testing::same_as(small.content(), load_checkpoint(checkpoint_path(ckpt, 1))));
}

TEST_CASE("a missing directory or a path through a file: CheckpointError with errno",
          "[unit][checkpoint][faults]") {
  ScratchDir dir;
  testing::SampleContent sample(1, 10);
  auto missing = save_error(sample.content(), dir.path() / "missing" / "step-1.h5");
  CHECK(missing.error_number() == ENOENT);
  CHECK_THAT(missing.what(), Contains((dir.path() / "missing" / "step-1.h5").string()));
  testing::write_bytes(dir.path() / "file", "x");
  auto through_file = save_error(sample.content(), dir.path() / "file" / "step-1.h5");
  CHECK(through_file.error_number() == ENOTDIR);
  CHECK(testing::file_names_in(dir.path()) == std::vector<std::string>{"file"});
}

TEST_CASE("permission denied: CheckpointError with EACCES", "[unit][checkpoint][faults]") {
  if (::geteuid() == 0) {
    WARN("skipped: root ignores directory permissions");
    return;
  }
  ScratchDir dir;
  auto locked = dir.path() / "locked";
  std::filesystem::create_directory(locked);
  std::filesystem::permissions(locked, std::filesystem::perms::owner_read |
                                           std::filesystem::perms::owner_exec);
  testing::SampleContent sample(1, 10);
  auto error = save_error(sample.content(), locked / "step-1.h5");
  CHECK(error.error_number() == EACCES);
  std::filesystem::permissions(locked, std::filesystem::perms::owner_all);
}
