// SPDX-License-Identifier: Apache-2.0
// Writing, checking and loading the journal snapshot (format and protocol in journal_snapshot.hpp).
#include "dlx/searcher/journal_snapshot.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <mutex>
#include <system_error>
#include <variant>

#include <fmt/format.h>

#include "dlx/common/crc32c.hpp"
#include "dlx/common/durable_file.hpp"
#include "dlx/common/error.hpp"
#include "dlx/common/file_lock.hpp"
#include "dlx/common/unique_fd.hpp"
#include "dlx/config/snapshot.hpp"
#include "journal_files.hpp"
#include "journal_snapshot_bytes.hpp"

namespace dlx::searcher {

namespace {

constexpr std::uint32_t kMagic = 0x53584C44;  // "DLXS" read as little-endian
constexpr std::size_t kHeaderBytes = 56;
constexpr std::size_t kHeaderChecked = 52;  // the header checksum covers bytes [0, 52)
constexpr std::size_t kMaxSnapshotBytes = std::size_t{4} << 30;

struct Header {
  SnapshotCoverage coverage;
  std::uint32_t experiment_crc = 0;
  std::uint64_t body_bytes = 0;
  std::uint32_t body_crc = 0;
};

// The header of `bytes` (at least kHeaderBytes of them), or why it is not a valid one.
std::variant<Header, std::string> parse_header(std::string_view bytes) {
  detail::ByteReader in(bytes.substr(0, kHeaderBytes), "journal snapshot header");
  if (in.u32() != kMagic) return std::string("not a journal snapshot (bad magic)");
  if (const auto version = in.u32(); version != kJournalSnapshotVersion) {
    return fmt::format("format version {}, this dlx reads version {}", version, kJournalSnapshotVersion);
  }
  Header header;
  header.coverage.journal_end = in.u64();
  header.coverage.records = in.u64();
  header.coverage.last.offset = in.u64();
  header.coverage.last.crc = in.u32();
  header.experiment_crc = in.u32();
  header.body_bytes = in.u64();
  header.body_crc = in.u32();
  if (in.u32() != crc32c(std::string_view(bytes.data(), kHeaderChecked))) {
    return std::string("header checksum mismatch (corrupt)");
  }
  const auto& coverage = header.coverage;
  if (coverage.last.offset >= coverage.journal_end || coverage.records == 0) {
    return fmt::format("header names last record offset {} for a journal end of {} (corrupt)", coverage.last.offset,
                       coverage.journal_end);
  }
  header.coverage.last.size = coverage.journal_end - coverage.last.offset;
  return header;
}

void remove_stale_temporaries(const std::filesystem::path& path) {
  // temporary_path_for(path) names them ".tmp.<file name>.<pid>...": ours are the ones with that
  // prefix. Only the snapshot lock's holder writes snapshots, and we hold it: nobody else is
  // writing one now, so every such file is a dead writer's.
  const std::string prefix = fmt::format(".tmp.{}.", path.filename().string());
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(path.parent_path(), error)) {
    if (entry.path().filename().string().starts_with(prefix)) std::filesystem::remove(entry.path(), error);
  }
}

// The snapshot writers' lock (step 1 of the protocol in journal_snapshot.hpp), taken without
// waiting: a classic fcntl lock, as journal.lock (dlx/common/file_lock.hpp says why). Those belong
// to the process, so a mutex orders this process's threads first.
class SnapshotLock {
 public:
  explicit SnapshotLock(const std::filesystem::path& lock_path) : thread_(process_writers(), std::try_to_lock) {
    if (!thread_.owns_lock()) return;
    // 0600, the owner's: a group member who could open it could hold it and keep every writer
    // from writing a snapshot (journal_files.hpp).
    lock_ = FileLock(detail::open_lock_file(lock_path), lock_path, LockOwner::process);
    lock_.try_lock(LockMode::exclusive);  // refused: another process holds it
  }
  // Released, and its descriptor closed (the only one of that file this process has open while it
  // holds the mutex), when lock_ is destroyed, before thread_.
  bool held() const { return lock_.held(); }

 private:
  static std::mutex& process_writers() {
    static std::mutex mutex;
    return mutex;
  }
  std::unique_lock<std::mutex> thread_;
  FileLock lock_;
};

std::string ignored(const std::filesystem::path& path, const std::string& why) {
  return fmt::format("ignoring the journal snapshot {}: {}; replaying the whole journal instead", path.string(),
                     why);
}

}  // namespace

std::filesystem::path journal_snapshot_path(const std::filesystem::path& journal_path) {
  return journal_path.parent_path() / kJournalSnapshotFileName;
}

std::filesystem::path journal_snapshot_lock_path(const std::filesystem::path& snapshot_path) {
  return snapshot_path.parent_path() / kJournalSnapshotLockFileName;
}

std::uint32_t experiment_checksum(const config::Experiment& experiment) {
  const auto yaml = config::to_yaml(experiment);
  return crc32c(yaml);
}

std::string encode_journal_snapshot(const SearchState& state, const SnapshotCoverage& coverage) {
  if (coverage.last.end() != coverage.journal_end || coverage.records == 0) {
    throw JournalError(fmt::format("journal snapshot: the last record ({} + {} bytes) does not end at the covered "
                                   "end {}", coverage.last.offset, coverage.last.size, coverage.journal_end));
  }
  const std::string body = state.encode();
  detail::ByteWriter out;
  out.bytes().reserve(kHeaderBytes + body.size());
  out.u32(kMagic);
  out.u32(kJournalSnapshotVersion);
  out.u64(coverage.journal_end);
  out.u64(coverage.records);
  out.u64(coverage.last.offset);
  out.u32(coverage.last.crc);
  out.u32(experiment_checksum(state.experiment()));
  out.u64(body.size());
  out.u32(crc32c(body));
  out.u32(crc32c(std::string_view(out.bytes().data(), kHeaderChecked)));
  out.bytes() += body;
  return std::move(out.bytes());
}

void write_journal_snapshot(const std::filesystem::path& path, const SearchState& state,
                            const SnapshotCoverage& coverage) {
  const auto bytes = encode_journal_snapshot(state, coverage);
  remove_stale_temporaries(path);
  write_file_durably(path, bytes, 0640);
}

bool journal_holds(const Journal& journal, const SnapshotCoverage& coverage) {
  const auto tail = journal.read_bytes(coverage.last.offset);
  return tail.file_size >= coverage.journal_end &&
         stamp_journal_record(tail.bytes, 0, coverage.last.offset) == coverage.last;
}

SnapshotPublish publish_journal_snapshot(const Journal& journal, const std::filesystem::path& path,
                                         const SearchState& state, const SnapshotCoverage& coverage,
                                         const std::function<void()>& while_locked) {
  const SnapshotLock lock(journal_snapshot_lock_path(path));
  if (!lock.held()) return SnapshotPublish::busy;
  if (while_locked) while_locked();
  // Never backwards: a snapshot of this journal that covers as much or more stays.
  if (const auto on_disk = peek_journal_snapshot(path);
      on_disk && on_disk->journal_end >= coverage.journal_end && journal_holds(journal, *on_disk)) {
    return SnapshotPublish::superseded;
  }
  write_journal_snapshot(path, state, coverage);
  return SnapshotPublish::written;
}

std::optional<SnapshotCoverage> peek_journal_snapshot(const std::filesystem::path& path) {
  // No link followed, and a FIFO under the name neither blocks the open nor counts as a snapshot.
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  struct stat info {};
  if (!fd || ::fstat(fd.get(), &info) != 0 || !S_ISREG(info.st_mode)) return std::nullopt;
  std::string bytes(kHeaderBytes, '\0');
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::pread(fd.get(), bytes.data() + done, bytes.size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::nullopt;
    done += static_cast<std::size_t>(n);
  }
  const auto header = parse_header(bytes);
  if (const auto* valid = std::get_if<Header>(&header)) return valid->coverage;
  return std::nullopt;
}

namespace {

// The snapshot file and its parsed header; nullopt when there is none (a missing file says
// nothing) or it cannot be used (out.ignored says why).
struct SnapshotFile {
  std::string bytes;
  Header header;
};

std::optional<SnapshotFile> read_snapshot_file(const std::filesystem::path& snapshot_path, CatchUp& out) {
  SnapshotFile file;
  try {
    file.bytes = read_small_file(snapshot_path, kMaxSnapshotBytes);
  } catch (const SystemError& error) {
    if (error.error_number() != ENOENT) out.ignored = ignored(snapshot_path, error.what());
    return std::nullopt;
  } catch (const Error& error) {
    out.ignored = ignored(snapshot_path, error.what());
    return std::nullopt;
  }
  if (file.bytes.size() < kHeaderBytes) {
    out.ignored = ignored(snapshot_path, fmt::format("truncated: {} bytes, shorter than its {}-byte header",
                                                     file.bytes.size(), kHeaderBytes));
    return std::nullopt;
  }
  auto parsed = parse_header(file.bytes);
  if (auto* why = std::get_if<std::string>(&parsed)) {
    out.ignored = ignored(snapshot_path, *why);
    return std::nullopt;
  }
  file.header = std::get<Header>(parsed);
  return file;
}

// Decodes the snapshot into `state` when it is whole and was taken of this experiment and this
// journal (out.snapshot then says what it covers); else out.ignored says why. The journal's bytes
// from the snapshot's last record on, when it was used.
std::optional<JournalBytes> load_snapshot(SearchState& state, const Journal& journal,
                                          const std::filesystem::path& snapshot_path, const SnapshotFile& file,
                                          CatchUp& out) {
  const Header& header = file.header;
  const std::string_view body = std::string_view(file.bytes).substr(kHeaderBytes);
  const auto& coverage = header.coverage;
  if (body.size() != header.body_bytes) {
    out.ignored = ignored(snapshot_path, fmt::format("truncated: a {}-byte body, the header says {}", body.size(),
                                                     header.body_bytes));
    return std::nullopt;
  }
  if (crc32c(body) != header.body_crc) {
    out.ignored = ignored(snapshot_path, "body checksum mismatch (corrupt)");
    return std::nullopt;
  }
  if (header.experiment_crc != experiment_checksum(state.experiment())) {
    out.ignored = ignored(snapshot_path, "written for a different experiment.yaml");
    return std::nullopt;
  }
  auto tail = journal.read_bytes(coverage.last.offset);
  if (tail.file_size < coverage.journal_end) {
    out.ignored = ignored(snapshot_path, fmt::format("stale: the journal is {} bytes, shorter than the {} it covers "
                                                     "(the journal was cut or replaced)",
                                                     tail.file_size, coverage.journal_end));
    return std::nullopt;
  }
  if (stamp_journal_record(tail.bytes, 0, coverage.last.offset) != coverage.last) {
    out.ignored = ignored(snapshot_path, fmt::format("does not match the journal: the record at offset {} is not "
                                                     "the one it was taken after (another experiment's or a "
                                                     "rewritten journal)", coverage.last.offset));
    return std::nullopt;
  }
  try {
    state.decode(body);
  } catch (const JournalError& error) {
    out.ignored = ignored(snapshot_path, error.what());
    return std::nullopt;
  }
  out.snapshot = coverage;
  return tail;
}

}  // namespace

CatchUp catch_up(SearchState& state, const Journal& journal, const std::filesystem::path& snapshot_path) {
  CatchUp out;
  std::optional<JournalBytes> tail;  // the journal from the snapshot's last record on
  if (const auto file = read_snapshot_file(snapshot_path, out)) {
    tail = load_snapshot(state, journal, snapshot_path, *file, out);
  }
  // The records after the snapshot (every record, without one).
  JournalScan scan;
  if (out.snapshot) {
    const auto skip = static_cast<std::size_t>(out.snapshot->last.size);
    scan = scan_journal(tail->bytes.substr(skip), out.snapshot->journal_end);
    out.records = out.snapshot->records;
    out.last = out.snapshot->last;
  } else {
    scan = scan_journal(journal.read_bytes(0).bytes);
  }
  for (const auto& record : scan.records) state.apply(record);
  out.corruption = scan.corruption;
  out.journal_end = scan.valid_end;
  out.records += scan.scanned();
  if (scan.last) out.last = scan.last;
  return out;
}

}  // namespace dlx::searcher
