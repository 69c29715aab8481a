// SPDX-License-Identifier: Apache-2.0
// Files dlx creates are mode 0640 whatever the umask (issue 17, finding 8): with umask 002 a
// group member could otherwise plant step-999999.h5 or rewrite a checkpoint or trial.h5 that a
// resume trusts; with umask 000 anyone could. Shown for trial.h5, step-<N>.h5 (sync and async
// writers) and h5::create_file itself, which experiment.h5 is written through.
#include <sys/stat.h>

#include <catch2/catch.hpp>

#include "checkpoint_samples.hpp"
#include "dlx/checkpoint/checkpoint.hpp"
#include "dlx/record/trial_record.hpp"
#include "dlx/checkpoint/writer.hpp"
#include "dlx/h5/objects.hpp"
#include "test_support.hpp"

using namespace dlx::checkpoint;
using namespace dlx::record;
using dlx::checkpoint::testing::ScratchDir;
namespace h5 = dlx::h5;

namespace {

unsigned mode_of(const std::filesystem::path& path) {
  struct stat status {};
  REQUIRE(::lstat(path.c_str(), &status) == 0);
  return status.st_mode & 07777;
}

// Sets the umask for the life of the object (the test process's own; restored after).
class Umask {
 public:
  explicit Umask(mode_t mask) : saved_(::umask(mask)) {}
  ~Umask() { ::umask(saved_); }
  Umask(const Umask&) = delete;
  Umask& operator=(const Umask&) = delete;

 private:
  mode_t saved_;
};

}  // namespace

TEST_CASE("every HDF5 file dlx creates is mode 0640 whatever the umask",
          "[unit][checkpoint][trial_record][modes]") {
  const mode_t mask = GENERATE(mode_t{002}, mode_t{000}, mode_t{077});
  CAPTURE(mask);
  ScratchDir dir;
  Umask umask(mask);

  SECTION("trial.h5") {
    const auto path = dir.path() / kTrialFileName;
    save_trial_record(testing::sample_record(), path);
    CHECK(mode_of(path) == 0640);
    save_trial_record(testing::sample_record(), path);  // rewritten: a new file, the same mode
    CHECK(mode_of(path) == 0640);
  }
  SECTION("step-<N>.h5, saved directly and by the async writer") {
    testing::SampleContent sample(100, 1000);
    save_checkpoint(sample.content(), checkpoint_path(dir.path(), 100));
    CHECK(mode_of(checkpoint_path(dir.path(), 100)) == 0640);
    WriterOptions options;
    options.directory = dir.path();
    CheckpointWriter writer(options);
    testing::SampleContent later(200, 1000);
    auto path = writer.save(later.content());
    writer.wait();
    CHECK(mode_of(path) == 0640);
  }
  SECTION("h5::create_file (experiment.h5 and every other file)") {
    const auto path = dir.path() / "experiment.h5";
    h5::create_file(path).close(path, "HDF5 file");
    CHECK(mode_of(path) == 0640);
    CHECK_THROWS_WITH(h5::create_file(path), Catch::Matchers::Contains("File exists"));
  }
}
