// SPDX-License-Identifier: Apache-2.0
// The metric lines' own thread (launcher/sdk/src/metric_line_printer.hpp) against real pipes: a
// reader gets every line whole and in order; a pipe nobody reads neither blocks print() nor the
// end for longer than the final drain, and what it could not take is counted on stderr; past the
// queue's bound lines are left out and a line says how many; a pipe with no reader left ends the
// printing without a SIGPIPE.
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "metric_line_printer.hpp"

using dlx::detail::MetricLinePrinter;
using Catch::Matchers::Contains;
using namespace std::chrono_literals;

namespace {

struct Pipe {
  int read = -1, write = -1;
  Pipe() {
    int fds[2];
    REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
    read = fds[0];
    write = fds[1];
  }
  ~Pipe() {
    if (read >= 0) ::close(read);
    if (write >= 0) ::close(write);
  }
  // Everything in the pipe now (its write end closed first, so that the read ends).
  std::string drain() {
    ::close(write);
    write = -1;
    std::string text;
    char buffer[65536];
    for (ssize_t n; (n = ::read(read, buffer, sizeof buffer)) > 0;) text.append(buffer, static_cast<std::size_t>(n));
    return text;
  }
};

// stderr into a pipe for the scope's length (the printer's notices go there).
struct CapturedStderr {
  Pipe pipe;
  int saved = ::dup(STDERR_FILENO);
  CapturedStderr() {
    REQUIRE(::fcntl(pipe.read, F_SETFL, O_NONBLOCK) == 0);
    REQUIRE(::dup2(pipe.write, STDERR_FILENO) == STDERR_FILENO);
  }
  ~CapturedStderr() { restore(); }
  void restore() {
    if (saved < 0) return;
    ::dup2(saved, STDERR_FILENO);
    ::close(saved);
    saved = -1;
  }
  std::string text() {
    restore();
    return pipe.drain();
  }
};

std::string line(int number) { return "dlx: trial 0 step " + std::to_string(number) + " validation accuracy=0.5\n"; }

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string one; std::getline(in, one);) lines.push_back(one);
  return lines;
}

// The step numbers of the printed lines, in order; every line must be whole.
std::vector<int> steps_in(const std::vector<std::string>& lines) {
  static const std::regex whole(R"(dlx: trial 0 step (\d+) validation accuracy=0\.5)");
  std::vector<int> steps;
  for (const auto& one : lines) {
    std::smatch match;
    if (std::regex_match(one, match, whole)) steps.push_back(std::stoi(match[1]));
  }
  return steps;
}

}  // namespace

TEST_CASE("a reader of the output gets every line, whole and in order", "[unit][metrics]") {
  Pipe pipe;
  std::string received;
  std::thread reader([&] {
    char buffer[1000];  // smaller reads than the printer's writes
    for (ssize_t n; (n = ::read(pipe.read, buffer, sizeof buffer)) > 0;) received.append(buffer, static_cast<std::size_t>(n));
  });
  {
    MetricLinePrinter printer(pipe.write);
    for (int batch = 0; batch < 200; ++batch) {
      std::string lines;
      for (int i = 0; i < 50; ++i) lines += line(batch * 50 + i);
      printer.print(std::move(lines));
    }
  }
  ::close(pipe.write);
  pipe.write = -1;
  reader.join();
  const auto lines = lines_of(received);
  const auto steps = steps_in(lines);
  REQUIRE(lines.size() == 10000);
  REQUIRE(steps.size() == 10000);
  for (int i = 0; i < 10000; ++i) REQUIRE(steps[static_cast<std::size_t>(i)] == i);
}

TEST_CASE("a pipe nobody reads blocks neither print() nor the end past the final drain", "[unit][metrics]") {
  Pipe pipe;
  CapturedStderr captured;
  const auto start = std::chrono::steady_clock::now();
  {
    MetricLinePrinter printer(pipe.write, 300ms);
    for (int i = 0; i < 4000; ++i) printer.print(line(i));  // ~190 KB: three times the pipe
    CHECK(std::chrono::steady_clock::now() - start < 2s);   // print() never waited for the pipe
  }
  const auto took = std::chrono::steady_clock::now() - start;
  CHECK(took >= 300ms);
  CHECK(took < 4s);
  const auto notice = captured.text();
  const auto printed = steps_in(lines_of(pipe.drain()));
  REQUIRE(!printed.empty());
  REQUIRE(printed.size() < 4000);
  for (std::size_t i = 0; i < printed.size(); ++i) REQUIRE(printed[i] == static_cast<int>(i));
  // What the pipe took are whole lines (a piece ends at a line's end), and the rest is counted.
  CHECK_THAT(notice, Contains("dlx: " + std::to_string(4000 - printed.size()) +
                              " metric lines not printed: the standard output took nothing for 0.3 s at the end"));
  CHECK_THAT(notice, Contains("the trial's record has every report"));
}

TEST_CASE("past the queue's bound lines are left out, and a line says how many", "[unit][metrics]") {
  Pipe pipe;
  const auto one = line(0).size();
  const int total = static_cast<int>(3 * MetricLinePrinter::kMaxQueuedBytes / one);
  std::string received;
  {
    MetricLinePrinter printer(pipe.write);
    for (int i = 0; i < total; ++i) printer.print(line(i));  // nobody reads yet: the queue fills
    std::thread reader([&] {
      char buffer[65536];
      for (ssize_t n; (n = ::read(pipe.read, buffer, sizeof buffer)) > 0;) {
        received.append(buffer, static_cast<std::size_t>(n));
        if (received.find("left out here") != std::string::npos) break;
      }
    });
    reader.join();
  }
  received += pipe.drain();
  const auto lines = lines_of(received);
  const auto printed = steps_in(lines);
  REQUIRE(lines.size() == printed.size() + 1);
  for (std::size_t i = 0; i < printed.size(); ++i) REQUIRE(printed[i] == static_cast<int>(i));
  CHECK(printed.size() * one <= 2 * MetricLinePrinter::kMaxQueuedBytes);
  CHECK(lines.back() == "dlx: " + std::to_string(total - static_cast<int>(printed.size())) +
                            " metric lines left out here: the output was not read as fast as they came "
                            "(the trial's record has every report)");
}

TEST_CASE("an output with no reader left ends the printing without a SIGPIPE", "[unit][metrics]") {
  Pipe pipe;
  ::close(pipe.read);
  pipe.read = -1;
  CapturedStderr captured;
  {
    MetricLinePrinter printer(pipe.write, 300ms);
    printer.print(line(1));
    std::this_thread::sleep_for(200ms);
    printer.print(line(2));  // kept nowhere: the output is gone
  }
  // Still here: a write would have raised SIGPIPE, whose default ends the process.
  CHECK_THAT(captured.text(), Contains("dlx: the standard output takes no more lines (closed, or nothing reads "
                                       "it): the metric lines stop here; the trial's record keeps every report"));
}
