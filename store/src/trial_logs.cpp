// SPDX-License-Identifier: Apache-2.0
#include "dlx/store/trial_logs.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <map>
#include <memory>
#include <optional>
#include <string_view>

#include <fmt/format.h>

#include "dlx/common/error.hpp"
#include "dlx/common/unique_fd.hpp"

namespace dlx::store {

namespace {

constexpr std::string_view kAttemptPrefix = "attempt-";
constexpr std::string_view kMarkerSuffix = ".run";
constexpr std::string_view kRankInfix = ".rank-";
constexpr std::string_view kLogSuffix = ".log";
constexpr std::size_t kMaxRunLength = 255;

// A decimal number of at most 9 digits (no sign, no leading '+'), all of `text`.
std::optional<int> small_number(std::string_view text) {
  if (text.empty() || text.size() > 9) return std::nullopt;
  int value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// A marker's run key: a regular file of at most kMaxRunLength bytes, read without following a
// link or blocking on a FIFO; nullopt for anything else.
std::optional<std::string> read_marker(int dir_fd, const char* name) {
  UniqueFd fd(::openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  struct stat status {};
  if (!fd || ::fstat(fd.get(), &status) != 0 || !S_ISREG(status.st_mode)) return std::nullopt;
  std::array<char, kMaxRunLength + 1> text{};
  const ssize_t length = ::read(fd.get(), text.data(), text.size());
  if (length < 0 || static_cast<std::size_t>(length) > kMaxRunLength) return std::nullopt;
  return std::string(text.data(), static_cast<std::size_t>(length));
}

// The run key in a temporary file of its own (0640), to be hard-linked under the marker's name.
std::string write_temporary_marker(int dir_fd, const std::string& run) {
  static std::atomic<unsigned> counter{0};
  const auto name = fmt::format(".tmp.attempt.{}.{}", ::getpid(), counter++);
  UniqueFd fd(::openat(dir_fd, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0640));
  if (!fd) throw SystemError(fmt::format("cannot create {} in the trial's logs directory", name), errno);
  const bool written = ::fchmod(fd.get(), 0640) == 0 &&
                       ::write(fd.get(), run.data(), run.size()) == static_cast<ssize_t>(run.size());
  if (!written) {
    const int error = errno;
    ::unlinkat(dir_fd, name.c_str(), 0);
    throw SystemError(fmt::format("cannot write {} in the trial's logs directory", name), error);
  }
  return name;
}

}  // namespace

fs::path trial_logs_dir(const fs::path& trial_dir) { return trial_dir / kTrialLogsDirName; }

std::string attempt_marker_name(int attempt) { return fmt::format("attempt-{}.run", attempt); }

std::string attempt_log_name(int attempt, int rank) {
  return fmt::format("attempt-{}.rank-{}.log", attempt, rank);
}

int claim_attempt(int logs_dir_fd, const std::string& run) {
  if (run.empty() || run.size() > kMaxRunLength) {
    throw Error(fmt::format("invalid run key '{}' for the trial's logs", run));
  }
  const auto temporary = write_temporary_marker(logs_dir_fd, run);
  struct RemoveTemporary {
    int dir;
    const std::string& name;
    ~RemoveTemporary() { ::unlinkat(dir, name.c_str(), 0); }
  } remove{logs_dir_fd, temporary};
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    const auto name = attempt_marker_name(attempt);
    if (::linkat(logs_dir_fd, temporary.c_str(), logs_dir_fd, name.c_str(), 0) == 0) return attempt;
    if (errno != EEXIST) throw SystemError(fmt::format("cannot create the log marker {}", name), errno);
    // Made by another rank of this run (take it) or by an earlier run (go on). Anything that is
    // not a marker (a link, a FIFO) is no run's: skip it.
    if (const auto existing = read_marker(logs_dir_fd, name.c_str()); existing && *existing == run) return attempt;
  }
  throw Error(fmt::format("the trial's logs directory has {} attempts already", kMaxAttempts));
}

std::vector<AttemptLogs> list_trial_logs(const fs::path& logs_dir) {
  UniqueFd dir(::open(logs_dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir) {
    if (errno == ENOENT) return {};
    throw SystemError(fmt::format("cannot read {}", logs_dir.string()), errno);
  }
  const int dup_fd = ::dup(dir.get());
  if (dup_fd < 0) throw SystemError(fmt::format("cannot read {}", logs_dir.string()), errno);
  std::unique_ptr<DIR, int (*)(DIR*)> stream(::fdopendir(dup_fd), ::closedir);
  if (!stream) {
    const int error = errno;
    ::close(dup_fd);
    throw SystemError(fmt::format("cannot read {}", logs_dir.string()), error);
  }
  std::map<int, AttemptLogs> attempts;
  errno = 0;
  while (const dirent* entry = ::readdir(stream.get())) {
    std::string_view name = entry->d_name;
    if (!name.starts_with(kAttemptPrefix)) continue;
    name.remove_prefix(kAttemptPrefix.size());
    if (name.ends_with(kMarkerSuffix)) {
      const auto attempt = small_number(name.substr(0, name.size() - kMarkerSuffix.size()));
      if (!attempt) continue;
      auto& logs = attempts[*attempt];
      logs.attempt = *attempt;
      logs.run = read_marker(dir.get(), entry->d_name).value_or("");
      continue;
    }
    const auto infix = name.find(kRankInfix);
    if (infix == std::string_view::npos || !name.ends_with(kLogSuffix)) continue;
    const auto attempt = small_number(name.substr(0, infix));
    const auto rank_text = name.substr(infix + kRankInfix.size());
    const auto rank = small_number(rank_text.substr(0, rank_text.size() - kLogSuffix.size()));
    if (!attempt || !rank) continue;
    auto& logs = attempts[*attempt];
    logs.attempt = *attempt;
    logs.ranks.push_back({*rank, logs_dir / entry->d_name});
  }
  if (errno != 0) throw SystemError(fmt::format("cannot read {}", logs_dir.string()), errno);
  std::vector<AttemptLogs> out;
  for (auto& [number, logs] : attempts) {
    std::sort(logs.ranks.begin(), logs.ranks.end(),
              [](const RankLog& a, const RankLog& b) { return a.rank < b.rank; });
    out.push_back(std::move(logs));
  }
  return out;
}

}  // namespace dlx::store
