// SPDX-License-Identifier: Apache-2.0
// The plugin's check of the Slurm release that loaded it (spank-plugin/slurm_release.hpp); the
// cluster test tests/cluster/slurm_release_test.sh shows it in sbatch and slurmd.
#include <catch2/catch.hpp>

#include <string>

#include "slurm_release.hpp"

using dlx::spank::parse_release;
using dlx::spank::release_mismatch;
using dlx::spank::release_of_version_number;
using dlx::spank::release_text;
using dlx::spank::SlurmRelease;

TEST_CASE("the release of a SLURM_VERSION_NUMBER ignores the micro release", "[plugin][slurm]") {
  CHECK(release_of_version_number(0x160508) == SlurmRelease{22, 5});
  CHECK(release_of_version_number(0x160500) == SlurmRelease{22, 5});
  CHECK(release_of_version_number(0x170b04) == SlurmRelease{23, 11});
  CHECK(release_text(release_of_version_number(0x160508)) == "22.05");
  CHECK(release_text(SlurmRelease{23, 11}) == "23.11");
}

TEST_CASE("the running release from spank_get_item's strings", "[plugin][slurm]") {
  CHECK(parse_release("22", "05") == SlurmRelease{22, 5});
  CHECK(parse_release("24", "11") == SlurmRelease{24, 11});
  auto bad = GENERATE(as<std::pair<std::string, std::string>>{}, std::pair{"", "05"}, std::pair{"22", ""},
                      std::pair{"22x", "05"}, std::pair{"-1", "05"}, std::pair{"22", "256"},
                      std::pair{"99999999999", "05"}, std::pair{" 22", "05"});
  INFO(bad.first << "." << bad.second);
  CHECK_FALSE(parse_release(bad.first, bad.second));
}

TEST_CASE("another release is refused with what to do, and the same release is not", "[plugin][slurm]") {
  CHECK(release_mismatch({22, 5}, {22, 5}).empty());
  CHECK(release_mismatch({23, 2}, {22, 5}) ==
        "this plugin was built for Slurm 23.02, but this is Slurm 22.05: rebuild/reinstall "
        "slurm-spank-plugin-dlx for this Slurm (--dl-experiment is refused until then; jobs without it "
        "run as usual)");
  CHECK_FALSE(release_mismatch({22, 5}, {22, 2}).empty());
}
