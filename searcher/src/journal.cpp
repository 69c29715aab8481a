// Locked, durable appends and reads of the journal file (protocol in journal.hpp).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include <fmt/format.h>

#include "dlx/common/error.hpp"
#include "dlx/common/unique_fd.hpp"
#include "dlx/searcher/journal.hpp"

namespace dlx::searcher {

namespace {

// A whole-file POSIX record lock, released on destruction (or when the fd closes).
class FileLock {
 public:
  FileLock(int fd, short type, const std::filesystem::path& path) : fd_(fd) {
    struct flock lock {};
    lock.l_type = type;
    lock.l_whence = SEEK_SET;
    while (::fcntl(fd_, F_SETLKW, &lock) != 0) {
      if (errno != EINTR) throw SystemError(fmt::format("cannot lock {}", path.string()), errno);
    }
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  ~FileLock() {
    struct flock lock {};
    lock.l_type = F_UNLCK;
    lock.l_whence = SEEK_SET;
    ::fcntl(fd_, F_SETLK, &lock);
  }

 private:
  int fd_;
};

std::uint64_t size_of(int fd, const std::filesystem::path& path) {
  struct stat info {};
  if (::fstat(fd, &info) != 0) throw SystemError(fmt::format("cannot stat {}", path.string()), errno);
  return static_cast<std::uint64_t>(info.st_size);
}

// The bytes from `from` to the end of the file.
std::string read_from(int fd, std::uint64_t from, const std::filesystem::path& path) {
  const auto size = size_of(fd, path);
  if (from > size) {
    throw JournalError(fmt::format("{} is {} bytes, shorter than the {} already read from it: "
                                   "it was truncated or replaced behind dlx's back",
                                   path.string(), size, from));
  }
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

}  // namespace

void Journal::append(const nlohmann::json& event) {
  transact(0, [&](const JournalScan&) { return std::vector<nlohmann::json>{event}; });
}

std::uint64_t Journal::transact(std::uint64_t from, const Decide& decide, const Committed& committed) {
  std::lock_guard<std::mutex> guard(mutex_);
  UniqueFd fd(::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0640));
  if (!fd) throw SystemError(fmt::format("cannot open journal {}", path_.string()), errno);
  FileLock lock(fd.get(), F_WRLCK, path_);

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
  if (scan.torn_tail && ::ftruncate(fd.get(), static_cast<off_t>(scan.valid_end)) != 0) {
    throw SystemError(fmt::format("cannot truncate the torn tail of {}", path_.string()), errno);
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
      // Leave no partial record behind us (ENOSPC, EIO); the next writer would truncate it anyway.
      (void)::ftruncate(fd.get(), static_cast<off_t>(scan.valid_end));
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
  std::lock_guard<std::mutex> guard(mutex_);
  UniqueFd fd(::open(path_.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) {
    if (errno == ENOENT) return {};
    throw SystemError(fmt::format("cannot open journal {}", path_.string()), errno);
  }
  FileLock lock(fd.get(), F_RDLCK, path_);
  return scan_journal(read_from(fd.get(), 0, path_));
}

JournalBytes Journal::read_bytes(std::uint64_t from) const {
  std::lock_guard<std::mutex> guard(mutex_);
  JournalBytes out;
  out.from = from;
  UniqueFd fd(::open(path_.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) {
    if (errno == ENOENT) return out;
    throw SystemError(fmt::format("cannot open journal {}", path_.string()), errno);
  }
  FileLock lock(fd.get(), F_RDLCK, path_);
  out.file_size = size_of(fd.get(), path_);
  if (from <= out.file_size) out.bytes = read_from(fd.get(), from, path_);
  return out;
}

}  // namespace dlx::searcher
