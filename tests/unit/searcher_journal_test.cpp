// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

#include "dlx/searcher/journal.hpp"
#include "searcher_temp_dir.hpp"

namespace fs = std::filesystem;
using dlx::searcher::Journal;
using dlx::searcher::JournalError;
using dlx::testing::slurp;
using dlx::testing::spit;
using dlx::testing::TempDir;

namespace {

nlohmann::json event(const std::string& id) { return {{"id", id}, {"type", "validation"}, {"metric", 0.5}}; }

}  // namespace

TEST_CASE("journal: appended events read back in order", "[journal]") {
  TempDir dir;
  Journal journal(dir.path / "journal");
  CHECK(journal.read().records.empty());
  for (auto id : {"a", "b", "c"}) journal.append(event(id));
  auto scan = journal.read();
  REQUIRE(scan.records.size() == 3);
  CHECK(scan.records[2].event["id"] == "c");
  CHECK(scan.valid_end == scan.file_size);
  CHECK_FALSE(scan.torn_tail);
  CHECK_THROWS_WITH(journal.append(nlohmann::json{{"type", "x"}}), Catch::Contains("string \"id\""));
}

TEST_CASE("journal: a torn tail at any byte is recovered, earlier events kept", "[journal]") {
  TempDir dir;
  const fs::path file = dir.path / "journal";
  Journal journal(file);
  journal.append(event("a"));
  journal.append(event("b"));
  const auto two = slurp(file).size();
  journal.append(event("c"));
  const auto full = slurp(file);
  for (std::size_t cut = two + 1; cut < full.size(); ++cut) {
    INFO("cut at byte " << cut);
    spit(file, full.substr(0, cut));
    auto scan = journal.read();
    CHECK(scan.records.size() == 2);
    CHECK(scan.torn_tail);
    CHECK(scan.corruption.empty());
    journal.append(event("d"));
    scan = journal.read();
    REQUIRE(scan.records.size() == 3);
    CHECK(scan.records[2].event["id"] == "d");
    CHECK_FALSE(scan.torn_tail);
  }
}

TEST_CASE("journal: corruption before valid records is reported, never truncated", "[journal]") {
  TempDir dir;
  const fs::path file = dir.path / "journal";
  Journal journal(file);
  for (auto id : {"a", "b", "c"}) journal.append(event(id));
  auto bytes = slurp(file);
  const auto second = journal.read().records[1].offset;
  bytes[second + 20] ^= 0x01;  // a bit flip inside the second record's payload
  spit(file, bytes);
  auto scan = journal.read();
  CHECK(scan.records.size() == 1);
  CHECK_THAT(scan.corruption, Catch::Contains("invalid record at offset " + std::to_string(second) +
                                              " (checksum mismatch) with valid records after it"));
  CHECK_THROWS_WITH(journal.append(event("d")), Catch::Contains("not appending"));
  CHECK(slurp(file) == bytes);  // nothing was lost to a "repair"
}

TEST_CASE("journal: an event posted twice counts once", "[journal]") {
  TempDir dir;
  Journal journal(dir.path / "journal");
  journal.append(event("a"));
  journal.append(event("a"));
  auto scan = journal.read();
  CHECK(scan.records.size() == 1);
  CHECK(scan.duplicates == 1);
}

TEST_CASE("journal: writers SIGKILLed mid-append never lose an acknowledged event", "[journal][crash]") {
  TempDir dir;
  const fs::path file = dir.path / "journal";
  std::set<std::string> acknowledged;
  std::mt19937 random(12345);
  for (int round = 0; round < 60; ++round) {
    int pipe_fds[2];
    REQUIRE(::pipe(pipe_fds) == 0);
    pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      ::close(pipe_fds[0]);
      Journal writer(file);
      for (int k = 0;; ++k) {
        std::string id = "r" + std::to_string(round) + "-" + std::to_string(k);
        writer.append({{"id", id}, {"padding", std::string(static_cast<std::size_t>(k % 700), 'x')}});
        std::string line = id + "\n";
        if (::write(pipe_fds[1], line.data(), line.size()) < 0) ::_exit(1);
      }
    }
    ::close(pipe_fds[1]);
    // The kill comes at a random point after the writer's first acknowledged append, so that
    // every round kills one in the middle of its work: a fixed delay alone, on a loaded machine,
    // could end a writer before its first append (a round that tested nothing).
    FILE* acks = ::fdopen(pipe_fds[0], "r");
    char line[128];
    REQUIRE(std::fgets(line, sizeof line, acks) != nullptr);  // the first append, acknowledged
    acknowledged.insert(std::string(line, std::strlen(line) - 1));
    ::usleep(std::uniform_int_distribution<unsigned>(200, 20000)(random));
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
    while (std::fgets(line, sizeof line, acks)) acknowledged.insert(std::string(line, std::strlen(line) - 1));
    std::fclose(acks);

    auto scan = Journal(file).read();
    REQUIRE(scan.corruption.empty());
    std::set<std::string> present;
    for (const auto& record : scan.records) present.insert(record.event["id"].get<std::string>());
    for (const auto& id : acknowledged) {
      INFO("round " << round << ": acknowledged " << id);
      REQUIRE(present.count(id) == 1);
    }
  }
}

TEST_CASE("journal: concurrent writer processes lose and duplicate nothing", "[journal][concurrency]") {
  TempDir dir;
  const fs::path file = dir.path / "journal";
  constexpr int kWriters = 8, kEvents = 40;
  std::vector<pid_t> children;
  for (int w = 0; w < kWriters; ++w) {
    pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      Journal writer(file);
      for (int k = 0; k < kEvents; ++k) writer.append({{"id", "w" + std::to_string(w) + "-" + std::to_string(k)}});
      ::_exit(0);
    }
    children.push_back(child);
  }
  for (pid_t child : children) {
    int status = 0;
    ::waitpid(child, &status, 0);
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
  }
  auto scan = Journal(file).read();
  CHECK(scan.corruption.empty());
  CHECK_FALSE(scan.torn_tail);
  CHECK(scan.duplicates == 0);
  CHECK(scan.records.size() == kWriters * kEvents);
}
