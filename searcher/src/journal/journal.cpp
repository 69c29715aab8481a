// SPDX-License-Identifier: Apache-2.0
// Durable appends to the journal under the writers' lock, and reads that take no lock (protocol
// in journal.hpp).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "dlx/common/error.hpp"
#include "dlx/common/unique_fd.hpp"
#include "dlx/searcher/journal.hpp"
#include "journal_files.hpp"
#include "journal_lock.hpp"

namespace dlx::searcher {

namespace {

std::uint64_t size_of(int fd, const std::filesystem::path& path) {
  struct stat info {};
  if (::fstat(fd, &info) != 0) throw SystemError(fmt::format("cannot stat {}", path.string()), errno);
  return static_cast<std::uint64_t>(info.st_size);
}

// The bytes [from, size) of the file, or fewer if it is cut meanwhile (a writer removing a torn
// tail while a reader, which takes no lock, reads).
std::string read_journal_range(int fd, std::uint64_t from, std::uint64_t size, const std::filesystem::path& path) {
  std::string bytes(static_cast<std::size_t>(size - from), '\0');
  std::size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::pread(fd, bytes.data() + done, bytes.size() - done, static_cast<off_t>(from + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw SystemError(fmt::format("cannot read {}", path.string()), errno);
    if (n == 0) break;
    done += static_cast<std::size_t>(n);
  }
  bytes.resize(done);
  return bytes;
}

// The bytes from `from` to the end of the file, as long as it was when this looked.
std::string read_from(int fd, std::uint64_t from, const std::filesystem::path& path) {
  const auto size = size_of(fd, path);
  if (from > size) {
    throw JournalError(fmt::format("{} is {} bytes, shorter than the {} already read from it: "
                                   "it was truncated or replaced behind dlx's back",
                                   path.string(), size, from));
  }
  return read_journal_range(fd, from, size, path);
}

// Before a writer cuts a torn tail at `from` (> 0, the end of what its process read earlier, with
// no lock: journal.hpp, Reading): `from` must still be where a valid record of the journal ends.
// Otherwise the journal changed below it (a record that process saw was lost before it was
// durable, and another took its place, or the file was restored or rewritten), and cutting there
// could cut a committed record in two.
void check_record_boundary(int fd, std::uint64_t from, const std::filesystem::path& path) {
  const std::string bytes = read_from(fd, 0, path);
  std::uint64_t at = 0;
  while (at < from) {
    const auto record = stamp_journal_record(bytes, static_cast<std::size_t>(at));
    if (!record) break;
    at = record->end();
  }
  if (at != from) {
    throw JournalError(fmt::format("{}: this process read the journal up to offset {}, which is no longer the end "
                                   "of a valid record there (the journal was cut, restored or rewritten below it); "
                                   "not appending: start the process again so that it reads the journal afresh",
                                   path.string(), from));
  }
}

}  // namespace

void Journal::append(const nlohmann::json& event) {
  transact(0, [&](const JournalScan&) { return std::vector<nlohmann::json>{event}; });
}

std::uint64_t Journal::transact(std::uint64_t from, const Decide& decide, const Committed& committed) {
  const UniqueFd fd = detail::open_journal_to_write(path_);
  const detail::JournalWriterLock lock(path_, fd.get());

  const JournalScan scan = scan_journal(read_from(fd.get(), from, path_), from);
  if (!scan.corruption.empty()) {
    throw JournalError(fmt::format("{}: {}; not appending (inspect it with `dlx replay`)", path_.string(), scan.corruption));
  }
  std::string records;
  for (const auto& event : decide(scan)) {
    if (!event.is_object() || !event.contains("id") || !event["id"].is_string()) {
      throw JournalError("a journal event must be an object with a string \"id\"");
    }
    records += encode_journal_record(event);
  }
  if (scan.torn_tail) {
    if (from > 0 && scan.valid_end == from) check_record_boundary(fd.get(), from, path_);
    if (::ftruncate(fd.get(), static_cast<off_t>(scan.valid_end)) != 0) {
      throw SystemError(fmt::format("cannot truncate the torn tail of {}", path_.string()), errno);
    }
  }
  if (records.empty()) {
    if (committed) committed(scan.valid_end);
    return scan.valid_end;
  }
  std::size_t done = 0;
  while (done < records.size()) {
    ssize_t n = ::pwrite(fd.get(), records.data() + done, records.size() - done,
                         static_cast<off_t>(scan.valid_end + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int saved = errno;
      // Leave no partial record behind us (ENOSPC, EIO). Best effort: when this fails too, the next
      // writer truncates the torn tail (above).
      [[maybe_unused]] const int truncated = ::ftruncate(fd.get(), static_cast<off_t>(scan.valid_end));
      throw SystemError(fmt::format("cannot append to {}", path_.string()), saved);
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fdatasync(fd.get()) != 0) throw SystemError(fmt::format("cannot fsync {}", path_.string()), errno);
  const std::uint64_t valid_end = scan.valid_end + records.size();
  if (committed) committed(valid_end);  // still under the lock
  return valid_end;
}

JournalScan Journal::read() const {
  // An invalid record with valid ones after it is corruption, or, on NFS, an append in progress
  // whose pages reached the server out of order (journal.hpp, Reading): look again, a little
  // later, before saying so.
  constexpr int kLooks = 3;
  for (int look = 1;; ++look) {
    const UniqueFd fd = detail::open_journal_to_read(path_);
    if (!fd) return {};
    JournalScan scan = scan_journal(read_from(fd.get(), 0, path_));
    if (scan.corruption.empty() || look == kLooks) return scan;
    std::this_thread::sleep_for(std::chrono::milliseconds(100 * look));
  }
}

JournalBytes Journal::read_bytes(std::uint64_t from) const {
  JournalBytes out;
  out.from = from;
  const UniqueFd fd = detail::open_journal_to_read(path_);
  if (!fd) return out;
  out.file_size = size_of(fd.get(), path_);
  if (from <= out.file_size) out.bytes = read_journal_range(fd.get(), from, out.file_size, path_);
  return out;
}

}  // namespace dlx::searcher
