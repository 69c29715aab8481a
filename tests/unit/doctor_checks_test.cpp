// SPDX-License-Identifier: Apache-2.0
// dlx doctor's checks on saved Slurm reports: the local cluster's settings pass; each setting dlx
// relies on, when missing, is reported with what was found and what to change.
#include <unistd.h>

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "plugstack_files.hpp"
#include "site_checks.hpp"

using namespace dlx::doctor;
namespace fs = std::filesystem;

namespace {

// Trimmed from `scontrol show config` on `dlx cluster up` (Slurm 22.05.8).
const char* kConfig = R"(Configuration data as of 2026-11-21T04:30:00
AuthInfo                = socket=/tmp/c/munge/munge.socket.2,cred_expire=10
JobRequeue              = 1
KillWait                = 5 sec
MaxArraySize            = 1001
PreemptMode             = REQUEUE
PreemptType             = preempt/partition_prio
RequeueExit             = 85
SlurmctldParameters     = preempt_send_user_signal
)";

const char* kPartitions =
    "PartitionName=low AllowGroups=ALL Default=YES GraceTime=60 Nodes=n[1-3] PriorityTier=1 PreemptMode=REQUEUE State=UP\n"
    "PartitionName=high AllowGroups=ALL Default=NO GraceTime=0 Nodes=n[1-3] PriorityTier=10 PreemptMode=OFF State=UP\n";

// A plugin file and a world-writable storage root in a temporary directory, and a plugstack line.
struct Installation {
  fs::path root = fs::temp_directory_path() / fmt_name();
  Installation() {
    fs::create_directories(root / "storage");
    fs::permissions(root / "storage", fs::perms::all | fs::perms::sticky_bit);
    std::ofstream(root / "dlx_spank.so") << "not really a plugin";
  }
  ~Installation() { fs::remove_all(root); }
  static std::string fmt_name() { return "dlx-doctor-test-" + std::to_string(::getpid()); }
  SiteFacts facts(const std::string& config = kConfig, const std::string& partitions = kPartitions) const {
    SiteFacts facts;
    facts.config = parse_scontrol_config(config);
    facts.partitions = parse_partitions(partitions);
    facts.mpi_plugins = "MPI plugin types are...\n\tnone\n\tpmi2\n\tpmix\n";
    facts.plugstack_path = "/etc/slurm/plugstack.conf";
    facts.plugstack_text = "# dlx\nrequired " + (root / "dlx_spank.so").string() + " storage_root=" +
                           (root / "storage").string() + "\n";
    return facts;
  }
};

const Finding& finding(const std::vector<Finding>& findings, const std::string& check) {
  for (const auto& f : findings) {
    if (f.check == check) return f;
  }
  FAIL("no finding for " << check);
  throw std::logic_error("unreachable");
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("the reports of Slurm's tools are parsed", "[doctor]") {
  auto config = parse_scontrol_config(kConfig);
  CHECK(config.at("KillWait") == "5 sec");
  CHECK(config.at("RequeueExit") == "85");
  CHECK(config.count("Configuration") == 0);
  auto partitions = parse_partitions(kPartitions);
  REQUIRE(partitions.size() == 2);
  CHECK(partitions[0].at("PartitionName") == "low");
  CHECK(partitions[1].at("PreemptMode") == "OFF");
  // `scontrol show node -o` (dlx cluster up --gpus 2 --shards-per-gpu 4, trimmed): a value with
  // spaces keeps its first word.
  auto nodes = parse_nodes("NodeName=n1 Arch=x86_64 Gres=gpu:2,shard:8 OS=Linux 6.1.0 #1 SMP State=IDLE\n"
                           "NodeName=n2 Gres=(null) Reason=not responding [slurm@2026-12-02T06:00:00]\n\n");
  REQUIRE(nodes.size() == 2);
  CHECK(nodes[0].at("Gres") == "gpu:2,shard:8");
  CHECK(nodes[0].at("OS") == "Linux");
  CHECK(nodes[0].at("State") == "IDLE");
  CHECK(nodes[1].at("NodeName") == "n2");
  CHECK(nodes[1].at("Gres") == "(null)");
  auto line = find_plugin_line("# required /x/dlx_spank.so old\n\n  optional dlx_spank.so storage_root=/s signal=none # c\n");
  REQUIRE(line);
  CHECK(line->line_number == 3);
  CHECK(line->control == "optional");
  CHECK(line->arguments == std::vector<std::string>{"storage_root=/s", "signal=none"});
  CHECK_FALSE(find_plugin_line("required /x/other.so\n"));
}

TEST_CASE("a cluster set up as site-config/slurm.conf.dlx says passes every check", "[doctor]") {
  Installation installation;
  for (const auto& f : check_site(installation.facts())) {
    INFO(f.check << ": " << f.found << " " << f.advice);
    CHECK(f.verdict == Verdict::ok);
  }
}

TEST_CASE("each missing requeue or preemption setting is a problem with the fix", "[doctor]") {
  Installation installation;
  SECTION("JobRequeue=0") {
    auto f = finding(check_site(installation.facts(replaced(kConfig, "JobRequeue              = 1", "JobRequeue = 0"))), "JobRequeue");
    CHECK(f.verdict == Verdict::fail);
    CHECK(f.found == "0");
    CHECK_THAT(f.advice, Catch::Contains("set JobRequeue=1"));
  }
  SECTION("RequeueExit unset") {
    auto f = finding(check_site(installation.facts(replaced(kConfig, "RequeueExit             = 85", "RequeueExit = (null)"))), "RequeueExit");
    CHECK(f.verdict == Verdict::fail);
    CHECK(f.found == "not set");
    CHECK_THAT(f.advice, Catch::Contains("add 85 to RequeueExit"));
  }
  SECTION("RequeueExit as a range that covers 85") {
    auto f = finding(check_site(installation.facts(replaced(kConfig, "RequeueExit             = 85", "RequeueExit = 3,80-90"))), "RequeueExit");
    CHECK(f.verdict == Verdict::ok);
  }
  SECTION("no preempt_send_user_signal") {
    auto f = finding(check_site(installation.facts(replaced(kConfig, "= preempt_send_user_signal", "= enable_configless"))), "preempt_send_user_signal");
    CHECK(f.verdict == Verdict::fail);
    CHECK_THAT(f.advice, Catch::Contains("add preempt_send_user_signal to SlurmctldParameters"));
  }
  SECTION("preempted jobs cancelled") {
    auto f = finding(check_site(installation.facts(kConfig, replaced(kPartitions, "PreemptMode=REQUEUE", "PreemptMode=CANCEL"))),
                     "partition low: PreemptMode");
    CHECK(f.verdict == Verdict::fail);
    CHECK_THAT(f.advice, Catch::Contains("set PreemptMode=REQUEUE"));
  }
  SECTION("a grace time shorter than dlx's exit deadline") {
    auto f = finding(check_site(installation.facts(kConfig, replaced(kPartitions, "GraceTime=60", "GraceTime=10"))),
                     "partition low: GraceTime");
    CHECK(f.verdict == Verdict::warn);
    CHECK(f.found == "10 s");
    CHECK_THAT(f.advice, Catch::Contains("DLX_EXIT_DEADLINE_S"));
  }
  SECTION("preemption off is a warning, not a problem") {
    auto findings = check_site(installation.facts(replaced(kConfig, "preempt/partition_prio", "preempt/none")));
    CHECK(finding(findings, "PreemptType").verdict == Verdict::warn);
    for (const auto& f : findings) CHECK(f.verdict != Verdict::fail);
  }
  SECTION("a very long cred_expire") {
    auto f = finding(check_site(installation.facts(replaced(kConfig, "cred_expire=10", "cred_expire=600"))), "cred_expire");
    CHECK(f.verdict == Verdict::warn);
    CHECK_THAT(f.found, Catch::Contains("restart after 601 s"));
  }
  SECTION("a cred_expire past 64 bits is a warning, not an exception (it was std::stol)") {
    auto f = finding(check_site(installation.facts(replaced(kConfig, "cred_expire=10", "cred_expire=99999999999999999999"))),
                     "cred_expire");
    CHECK(f.verdict == Verdict::warn);
  }
  SECTION("cred_expire without digits is Slurm's default") {
    auto f = finding(check_site(installation.facts(replaced(kConfig, "cred_expire=10", "cred_expire=-5"))), "cred_expire");
    CHECK(f.verdict == Verdict::ok);
    CHECK_THAT(f.found, Catch::Contains("120 s (default)"));
  }
}

TEST_CASE("the storage root: who can change it, and users' directories made by someone else", "[doctor]") {
  Installation installation;
  const auto storage = installation.root / "storage";
  const auto storage_findings = [&] {
    std::vector<Finding> out;
    for (const auto& f : check_site(installation.facts())) {
      if (f.check == "storage_root") out.push_back(f);
    }
    return out;
  };
  SECTION("1777: users make their own directories") {
    const auto found = storage_findings();
    REQUIRE(found.size() == 1);
    CHECK(found[0].verdict == Verdict::ok);
    CHECK_THAT(found[0].found, Catch::Contains("mode 1777: users make their own directories"));
  }
  SECTION("0755: the administrator makes them") {
    fs::permissions(storage, fs::perms(0755));
    const auto found = storage_findings();
    REQUIRE(found.size() == 1);
    CHECK(found[0].verdict == Verdict::ok);
    CHECK_THAT(found[0].found, Catch::Contains("dlx storage add-user USER"));
  }
  SECTION("writable by all without the sticky bit") {
    fs::permissions(storage, fs::perms(0777));
    const auto found = storage_findings();
    REQUIRE(found.size() == 1);
    CHECK(found[0].verdict == Verdict::fail);
    CHECK_THAT(found[0].found, Catch::Contains("(mode 0777) is writable by its group and all users without the sticky bit"));
  }
  SECTION("a directory named after a user, made by another") {
    if (::geteuid() != 0) {
      WARN("skipped: needs root to make a directory of another user");
      return;
    }
    // `bin`'s directory, made by `daemon` (uid 1) in a 1777 root: what squatting leaves behind.
    fs::create_directory(storage / "bin");
    REQUIRE(::chown((storage / "bin").c_str(), 1, 1) == 0);
    const auto found = storage_findings();
    REQUIRE(found.size() == 2);
    CHECK(found[0].verdict == Verdict::fail);
    CHECK(found[0].found == (storage / "bin").string() + " is not bin's own directory: owned by daemon");
    CHECK_THAT(found[0].advice, Catch::Contains("dlx storage add-user bin"));
    CHECK(found[1].verdict == Verdict::ok);
  }
}

TEST_CASE("the plugin line, its file and its storage root are checked", "[doctor]") {
  Installation installation;
  SECTION("no dlx line") {
    auto facts = installation.facts();
    facts.plugstack_text = "required /usr/lib/other.so\n";
    auto f = finding(check_site(facts), "plugin");
    CHECK(f.verdict == Verdict::fail);
    CHECK(f.found == "no dlx_spank.so line in /etc/slurm/plugstack.conf");
  }
  SECTION("plugin file missing") {
    fs::remove(installation.root / "dlx_spank.so");
    auto f = finding(check_site(installation.facts()), "plugin");
    CHECK(f.verdict == Verdict::fail);
    CHECK_THAT(f.found, Catch::Contains("line 2") && Catch::Contains("does not exist on this host"));
  }
  SECTION("a bad plugin argument is reported with the plugin's own message") {
    auto facts = installation.facts();
    *facts.plugstack_text += "";
    facts.plugstack_text = replaced(*facts.plugstack_text, "storage_root=", "storage_roots=");
    auto f = finding(check_site(facts), "plugin arguments");
    CHECK(f.verdict == Verdict::fail);
    CHECK_THAT(f.advice, Catch::Contains("storage_roots"));
  }
  SECTION("storage root missing or not writable by users") {
    fs::permissions(installation.root / "storage", fs::perms::owner_all);
    CHECK(finding(check_site(installation.facts()), "storage_root").verdict == Verdict::warn);
    fs::remove(installation.root / "storage");
    auto f = finding(check_site(installation.facts()), "storage_root");
    CHECK(f.verdict == Verdict::fail);
    CHECK_THAT(f.found, Catch::Contains("is not a directory"));
  }
  SECTION("plugstack.conf unreadable from here is skipped, not failed") {
    auto facts = installation.facts();
    facts.plugstack_text.reset();
    CHECK(finding(check_site(facts), "plugin").verdict == Verdict::skipped);
  }
  SECTION("no pmix") {
    auto facts = installation.facts();
    facts.mpi_plugins = "MPI plugin types are...\n\tnone\n\tpmi2\n";
    CHECK(finding(check_site(facts), "MPI plugin").verdict == Verdict::fail);
  }
}

TEST_CASE("the dlx line is found in the files plugstack.conf includes, as Slurm reads them", "[doctor]") {
  const Installation installation;
  const fs::path etc = installation.root / "etc";
  fs::create_directories(etc / "plugstack.conf.d");
  const std::string line = "required /usr/lib/x86_64-linux-gnu/slurm-wlm/dlx_spank.so storage_root=/shared/dlx\n";
  const auto write = [](const fs::path& path, const std::string& text) { std::ofstream(path) << text; };

  SECTION("Debian's plugstack.conf: an absolute include pattern") {
    write(etc / "plugstack.conf", "include " + (etc / "plugstack.conf.d").string() + "/*.conf\n");
    write(etc / "plugstack.conf.d/other.conf", "optional /usr/lib/other.so\n");
    write(etc / "plugstack.conf.d/dlx.conf", line);
    write(etc / "plugstack.conf.d/dlx.conf.dpkg-disabled", "required /gone/dlx_spank.so\n");
    const auto file = plugstack_file_with_dlx((etc / "plugstack.conf").string());
    REQUIRE(file);
    CHECK(file->path == (etc / "plugstack.conf.d/dlx.conf").string());
    CHECK(file->text == line);
  }
  SECTION("a relative pattern is relative to the including file's directory, includes nest") {
    write(etc / "plugstack.conf", "# site\ninclude plugstack.conf.d/*.conf\n");
    write(etc / "plugstack.conf.d/site.conf", "include ../more/dlx.conf\n");
    fs::create_directories(etc / "more");
    write(etc / "more/dlx.conf", line);
    const auto file = plugstack_file_with_dlx((etc / "plugstack.conf").string());
    REQUIRE(file);
    CHECK(fs::path(file->path).lexically_normal() == (etc / "more/dlx.conf"));
  }
  SECTION("no dlx line anywhere: plugstack.conf itself, and a file including itself ends") {
    write(etc / "plugstack.conf", "include " + (etc / "plugstack.conf").string() + "\n");
    const auto file = plugstack_file_with_dlx((etc / "plugstack.conf").string());
    REQUIRE(file);
    CHECK(file->path == (etc / "plugstack.conf").string());
    CHECK_FALSE(find_plugin_line(file->text));
  }
  SECTION("an unreadable plugstack.conf") {
    CHECK_FALSE(plugstack_file_with_dlx((etc / "missing.conf").string()));
  }
}
