// SPDX-License-Identifier: Apache-2.0
// plugstack.conf's signal= option: the preemption notice the plugin adds as sbatch --signal.
#include <catch2/catch.hpp>

#include "dlx/common/error.hpp"
#include "plugin_options.hpp"

using dlx::spank::parse_plugin_options;
using dlx::spank::parse_signal_option;

TEST_CASE("plugstack signal=: accepted forms", "[unit][spank]") {
  CHECK(parse_plugin_options({"storage_root=/s"}).signal == "USR2@60");  // the default
  CHECK(parse_signal_option("USR2@60") == "USR2@60");
  CHECK(parse_signal_option("SIGUSR1@120") == "USR1@120");
  CHECK(parse_signal_option("12@007") == "USR2@7");
  CHECK(parse_signal_option("TERM") == "TERM");
  CHECK(parse_signal_option("none").empty());
  CHECK(parse_plugin_options({"storage_root=/s", "signal=none"}).signal.empty());
}

TEST_CASE("plugstack signal=: every bad value is refused with the value named", "[unit][spank]") {
  using Catch::Contains;
  CHECK_THROWS_WITH(parse_signal_option("B:USR2@60"),
                    Contains("'B:USR2@60' has a prefix") && Contains("kill the batch shell"));
  CHECK_THROWS_WITH(parse_signal_option("KILL@60"),
                    Contains("'KILL@60' is not one the trainer catches") && Contains("USR1, USR2 or TERM"));
  CHECK_THROWS_WITH(parse_signal_option("USR2@soon"), Contains("'soon' is not a number of seconds"));
  CHECK_THROWS_WITH(parse_signal_option("USR2@70000"), Contains("(0-65535)"));
  CHECK_THROWS_WITH(parse_signal_option("USR2@"), Contains("'' is not a number of seconds"));
  CHECK_THROWS_WITH(parse_plugin_options({"storage_root=/s", "signal=HUP"}),
                    Contains("plugstack.conf: signal 'HUP'"));
}

TEST_CASE("plugstack local_dir=: the data cache's node-local base, %n and %u kept for dlx-launch", "[unit][spank]") {
  using Catch::Contains;
  CHECK(parse_plugin_options({"storage_root=/s"}).local_dir.empty());  // the default: $TMPDIR, else /tmp
  CHECK(parse_plugin_options({"storage_root=/s", "local_dir=/local/%n/%u"}).local_dir == "/local/%n/%u");
  CHECK_THROWS_WITH(parse_plugin_options({"storage_root=/s", "local_dir=local"}),
                    Contains("plugstack.conf: local_dir 'local' is not an absolute path") &&
                        Contains("local_dir=/local/%u"));
  CHECK_THROWS_WITH(parse_plugin_options({"storage_root=/s", "local_dir=/local/%j"}),
                    Contains("local_dir '/local/%j' has the unknown placeholder %j"));
  CHECK_THROWS_WITH(parse_plugin_options({"storage_root=/s", "local_dir="}), Contains("local_dir '' is empty"));
  CHECK_THROWS_WITH(parse_plugin_options({"storage_root=/s", "locale_dir=/x"}),
                    Contains("unknown argument 'locale_dir'") && Contains("local_dir"));
}
