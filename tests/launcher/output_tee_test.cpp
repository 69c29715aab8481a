// SPDX-License-Identifier: Apache-2.0
// dlx-launch's copy of the trainer's output (output_tee.hpp) and the attempt numbering of the
// trial's logs (store/trial_logs.hpp): real processes writing into real pipes and files.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "dlx/common/unique_fd.hpp"
#include "dlx/launch/output_tee.hpp"
#include "dlx/store/trial_logs.hpp"
#include "process_helpers.hpp"

using dlx::UniqueFd;
using dlx::launch::OutputTee;
using dlx::launch::TeeOptions;
using dlx::test::TempDir;
namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

UniqueFd create(const fs::path& path) {
  return UniqueFd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640));
}

// Runs `sh -c script` with the tee's pipes as its stdout and stderr; returns its exit status.
int run_through(const OutputTee& tee, const std::string& script) {
  const pid_t child = ::fork();
  if (child == 0) {
    ::dup2(tee.out_fd(), STDOUT_FILENO);
    ::dup2(tee.err_fd(), STDERR_FILENO);
    ::execl("/bin/sh", "sh", "-c", script.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

struct Streams {
  TempDir dir{"tee"};
  UniqueFd out = create(dir.path() / "slurm.out");
  UniqueFd err = create(dir.path() / "slurm.err");
  UniqueFd log = create(dir.path() / "attempt-0.rank-0.log");
};

}  // namespace

TEST_CASE("tee: both streams reach their own destination and one log, in order", "[tee]") {
  Streams streams;
  OutputTee tee(std::move(streams.log), streams.out.get(), streams.err.get());
  // Each line waits for the previous one to be read, so the order in the log is known.
  CHECK(run_through(tee, "echo out-1; sleep 0.1; echo err-1 >&2; sleep 0.1; printf 'out-2'; exit 3") == 3);
  const auto result = tee.finish();
  CHECK(slurp(streams.dir.path() / "slurm.out") == "out-1\nout-2");
  CHECK(slurp(streams.dir.path() / "slurm.err") == "err-1\n");
  CHECK(slurp(streams.dir.path() / "attempt-0.rank-0.log") == "out-1\nerr-1\nout-2");
  CHECK(result.logged_bytes == 17);
  CHECK_FALSE(result.truncated);
}

TEST_CASE("tee: a grandchild holding the pipes open does not hang the finish", "[tee]") {
  Streams streams;
  TeeOptions options;
  options.drain_grace = std::chrono::milliseconds(300);
  OutputTee tee(std::move(streams.log), streams.out.get(), streams.err.get(), options);
  // The trainer exits at once; the background sleep it started keeps both pipes open.
  CHECK(run_through(tee, "sleep 20 & echo grandchild $!; echo trainer done >&2") == 0);
  const auto start = std::chrono::steady_clock::now();
  tee.finish();
  const auto took = std::chrono::steady_clock::now() - start;
  const auto log = slurp(streams.dir.path() / "attempt-0.rank-0.log");
  // End the grandchild this test started (its pid is in the log).
  std::istringstream words(log);
  std::string word;
  pid_t grandchild = 0;
  while (words >> word) {
    if (word == "grandchild" && words >> grandchild) break;
  }
  REQUIRE(grandchild > 0);
  ::kill(grandchild, SIGKILL);
  CHECK(took < std::chrono::seconds(3));
  CHECK(took >= std::chrono::milliseconds(250));  // it did wait for the grace
  CHECK_THAT(log, Catch::Contains("trainer done"));
}

TEST_CASE("tee: output after the trainer exits but within the grace is kept", "[tee]") {
  Streams streams;
  TeeOptions options;
  options.drain_grace = std::chrono::milliseconds(2000);
  OutputTee tee(std::move(streams.log), streams.out.get(), streams.err.get(), options);
  CHECK(run_through(tee, "(sleep 0.3; echo late) & echo early") == 0);
  tee.finish();  // returns at the grandchild's exit (end of file), well within the grace
  CHECK(slurp(streams.dir.path() / "attempt-0.rank-0.log") == "early\nlate\n");
}

TEST_CASE("tee: the log stops at its cap with a marker, the stream gets everything", "[tee]") {
  Streams streams;
  TeeOptions options;
  options.max_bytes = 1000;
  OutputTee tee(std::move(streams.log), streams.out.get(), streams.err.get(), options);
  // 2 MB without a newline: more than the pipe holds, so the thread keeps reading past the cap.
  CHECK(run_through(tee, "head -c 2000000 /dev/zero | tr '\\0' x") == 0);
  const auto result = tee.finish();
  CHECK(fs::file_size(streams.dir.path() / "slurm.out") == 2'000'000);
  const auto log = slurp(streams.dir.path() / "attempt-0.rank-0.log");
  const auto marker = dlx::launch::truncation_marker(1000);
  CHECK(log.size() == 1000 + 1 + marker.size());  // cut mid-line: a newline before the marker
  CHECK(log.substr(1001) == marker);
  CHECK_THAT(marker, Catch::Contains("DLX_LOG_MAX_MB"));
  CHECK(result.truncated);
  CHECK(result.logged_bytes == 1000);
  CHECK(result.seen_bytes == 2'000'000);
}

TEST_CASE("tee: a closed destination stream does not stop the log or kill the tee", "[tee]") {
  Streams streams;
  int pipe_fds[2];
  REQUIRE(::pipe2(pipe_fds, O_CLOEXEC) == 0);
  ::close(pipe_fds[0]);  // nobody reads: writes fail with EPIPE (SIGPIPE is blocked in the thread)
  UniqueFd broken(pipe_fds[1]);
  OutputTee tee(std::move(streams.log), broken.get(), streams.err.get());
  CHECK(run_through(tee, "echo one; echo two") == 0);
  tee.finish();
  CHECK(slurp(streams.dir.path() / "attempt-0.rank-0.log") == "one\ntwo\n");
}

TEST_CASE("tee: a line appended after the finish goes into the log alone, where the cap leaves room", "[tee]") {
  Streams streams;
  TeeOptions options;
  options.max_bytes = 40;
  OutputTee tee(std::move(streams.log), streams.out.get(), streams.err.get(), options);
  CHECK(run_through(tee, "echo trainer output") == 0);
  CHECK_FALSE(tee.append_to_log("too early\n"));  // the thread still owns the log
  tee.finish();
  CHECK(tee.append_to_log("dlx-launch: bye\n"));
  CHECK_FALSE(tee.append_to_log("dlx-launch: past the cap\n"));  // 15 + 16 + 25 > 40
  CHECK(slurp(streams.dir.path() / "attempt-0.rank-0.log") == "trainer output\ndlx-launch: bye\n");
  CHECK(slurp(streams.dir.path() / "slurm.out") == "trainer output\n");
  CHECK(slurp(streams.dir.path() / "slurm.err").empty());
}

TEST_CASE("tee: nothing is appended to a log the cap cut", "[tee]") {
  Streams streams;
  TeeOptions options;
  options.max_bytes = 10;
  OutputTee tee(std::move(streams.log), streams.out.get(), streams.err.get(), options);
  CHECK(run_through(tee, "echo more than ten bytes") == 0);
  CHECK(tee.finish().truncated);
  CHECK_FALSE(tee.append_to_log("x\n"));  // 1 byte would fit, but after the marker it would read as cut
  CHECK_THAT(slurp(streams.dir.path() / "attempt-0.rank-0.log"), Catch::EndsWith(dlx::launch::truncation_marker(10)));
}

TEST_CASE("trial logs: the ranks of one run agree on the attempt, a later run takes the next", "[tee]") {
  TempDir dir("attempts");
  UniqueFd logs(::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY));
  // Eight processes of one run race for the number, as the ranks of a step do.
  std::vector<pid_t> ranks;
  for (int rank = 0; rank < 8; ++rank) {
    const pid_t child = ::fork();
    if (child == 0) ::_exit(dlx::store::claim_attempt(logs.get(), "77.0.0"));
    ranks.push_back(child);
  }
  for (const pid_t child : ranks) {
    int status = 0;
    ::waitpid(child, &status, 0);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  CHECK(dlx::store::claim_attempt(logs.get(), "77.1.0") == 1);   // the requeued run
  CHECK(dlx::store::claim_attempt(logs.get(), "77.0.0") == 0);   // a late rank of the first
  CHECK(dlx::store::claim_attempt(logs.get(), "90.0.0") == 2);   // another ticket continues it
  CHECK(slurp(dir.path() / "attempt-1.run") == "77.1.0");
  CHECK((fs::status(dir.path() / "attempt-1.run").permissions() & fs::perms::all) ==
        (fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read));
  for (const auto& entry : fs::directory_iterator(dir.path())) {  // no temporary left behind
    CHECK_FALSE(entry.path().filename().string().starts_with(".tmp."));
  }
  std::ofstream(dir.path() / "attempt-1.rank-0.log") << "x";
  std::ofstream(dir.path() / "attempt-0.rank-2.log") << "x";
  std::ofstream(dir.path() / "attempt-0.rank-10.log") << "x";
  std::ofstream(dir.path() / "attempt-x.rank-0.log") << "not dlx's";
  std::ofstream(dir.path() / "notes.txt") << "not dlx's";
  const auto listed = dlx::store::list_trial_logs(dir.path());
  REQUIRE(listed.size() == 3);
  CHECK(listed[0].attempt == 0);
  CHECK(listed[0].run == "77.0.0");
  REQUIRE(listed[0].ranks.size() == 2);
  CHECK(listed[0].ranks[0].rank == 2);
  CHECK(listed[0].ranks[1].rank == 10);
  CHECK(listed[1].ranks.size() == 1);
  CHECK(listed[2].run == "90.0.0");
  CHECK(listed[2].ranks.empty());
  CHECK(dlx::store::list_trial_logs(dir.path() / "missing").empty());
}
