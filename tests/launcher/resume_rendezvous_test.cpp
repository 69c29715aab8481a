// SPDX-License-Identifier: Apache-2.0
// The resume rendezvous of ranks without a communicator (launcher/sdk/src/resume_rendezvous.hpp):
// the run's name, rank 0's published choice as the other ranks read it, earlier runs' choices
// removed, and the errors a user can meet (no run name, a bad DLX_RUN_ID, rank 0 never saying).
#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "dlx/checkpointing.hpp"
#include "dlx/common/durable_file.hpp"
#include "resume_rendezvous.hpp"

using dlx::detail::ResumeRendezvous;
using dlx::env::EnvMap;

namespace {

std::filesystem::path fresh_directory(const char* name) {
  const auto directory = std::filesystem::temp_directory_path() / name;
  std::filesystem::remove_all(directory);
  std::filesystem::create_directories(directory);
  return directory;
}

const EnvMap kSlurmStep{{"SLURM_JOB_ID", "812"}, {"SLURM_STEP_ID", "0"},
                        {"SLURM_RESTART_COUNT", "2"}};

}  // namespace

TEST_CASE("resume rendezvous: rank 0's choice reaches the other ranks", "[resume]") {
  const auto directory = fresh_directory("dlx-rendezvous-choice");
  const auto rank0 = ResumeRendezvous::for_run(directory, kSlurmStep, 0);
  const auto rank1 = ResumeRendezvous::for_run(directory, kSlurmStep, 0);
  CHECK(rank0.path() == directory / ".resume.812.2.0.0");
  CHECK(rank1.path() == rank0.path());
  // A stale choice of an earlier run of the trial (restart 1) is removed, never read.
  dlx::write_file_durably(directory / ".resume.812.1.0.0", R"({"checkpoint": "/old"})");
  rank0.publish({directory / "checkpoints" / "step-40.h5", ""});
  CHECK_FALSE(std::filesystem::exists(directory / ".resume.812.1.0.0"));
  const auto told = rank1.wait(std::chrono::seconds(5));
  CHECK(told.checkpoint == directory / "checkpoints" / "step-40.h5");
  CHECK(told.error.empty());

  // A fresh start, and rank 0's failure, travel the same way (the second resume() call).
  const auto second = ResumeRendezvous::for_run(directory, kSlurmStep, 1);
  second.publish({{}, "dlx: cannot look for a checkpoint: disk on fire"});
  const auto failed = ResumeRendezvous::for_run(directory, kSlurmStep, 1).wait(std::chrono::seconds(5));
  CHECK(failed.checkpoint.empty());
  CHECK(failed.error == "dlx: cannot look for a checkpoint: disk on fire");
  std::filesystem::remove_all(directory);
}

TEST_CASE("resume rendezvous: a run needs a name every rank shares", "[resume]") {
  const auto directory = fresh_directory("dlx-rendezvous-name");
  CHECK_THROWS_WITH(ResumeRendezvous::for_run(directory, EnvMap{}, 0),
                    Catch::Contains("cannot agree on the checkpoint to resume from: run them "
                                    "with `srun dlx-launch`, or set DLX_RUN_ID"));
  CHECK_THROWS_AS(ResumeRendezvous::for_run(directory, EnvMap{}, 0), dlx::CheckpointingError);
  CHECK_THROWS_WITH(ResumeRendezvous::for_run(directory, EnvMap{{"DLX_RUN_ID", "../x"}}, 0),
                    Catch::StartsWith("dlx: DLX_RUN_ID='../x' is not a run name (1 to 128 "
                                      "letters, digits, '_', '-', '.')"));
  CHECK(ResumeRendezvous::for_run(directory, EnvMap{{"DLX_RUN_ID", "by-hand.3"}}, 0).path() ==
        directory / ".resume.by-hand.3.0");
  std::filesystem::remove_all(directory);
}

TEST_CASE("resume rendezvous: a rank that hears nothing gives up with what to check", "[resume]") {
  const auto directory = fresh_directory("dlx-rendezvous-silence");
  const auto waiting = ResumeRendezvous::for_run(directory, kSlurmStep, 0);
  CHECK_THROWS_WITH(waiting.wait(std::chrono::milliseconds(50)),
                    Catch::Contains("rank 0 did not say within 0 s which checkpoint to resume "
                                    "from") &&
                        Catch::Contains("DLX_RESUME_WAIT_S sets the limit"));
  std::ofstream(waiting.path()) << "[1, 2]";
  CHECK_THROWS_WITH(waiting.wait(std::chrono::seconds(1)),
                    Catch::Contains("does not hold rank 0's choice of checkpoint"));
  CHECK(ResumeRendezvous::wait_limit(EnvMap{}) == std::chrono::seconds(900));
  CHECK(ResumeRendezvous::wait_limit(EnvMap{{"DLX_RESUME_WAIT_S", "30"}}) ==
        std::chrono::seconds(30));
  std::filesystem::remove_all(directory);
}
