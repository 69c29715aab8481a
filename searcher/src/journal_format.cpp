// Encoding and scanning of journal records (the format is described in journal.hpp).
#include <cstring>
#include <unordered_set>

#include <fmt/format.h>

#include "dlx/searcher/journal.hpp"

namespace dlx::searcher {

namespace {

constexpr std::uint32_t kMagic = 0x4A584C44;  // "DLXJ" read as little-endian
constexpr std::size_t kHeaderBytes = 12;
constexpr std::uint32_t kMaxPayload = 1 << 20;


void put_u32(std::string& out, std::uint32_t value) {
  for (int shift = 0; shift < 32; shift += 8) out.push_back(static_cast<char>((value >> shift) & 0xFF));
}

std::uint32_t get_u32(const std::string& bytes, std::size_t at) {
  std::uint32_t value = 0;
  for (int k = 3; k >= 0; --k) value = (value << 8) | static_cast<unsigned char>(bytes[at + static_cast<std::size_t>(k)]);
  return value;
}

// The record at `at`: its payload length, or the reason it is invalid.
struct Probe {
  bool valid = false;
  bool incomplete = false;  // runs past the end of the file
  std::size_t size = 0;     // header + payload when valid
  std::string why;
};

Probe probe(const std::string& bytes, std::size_t at) {
  Probe result;
  if (bytes.size() - at < kHeaderBytes) {
    result.incomplete = true;
    result.why = "incomplete header";
    return result;
  }
  if (get_u32(bytes, at) != kMagic) {
    result.why = "bad magic";
    return result;
  }
  std::uint32_t length = get_u32(bytes, at + 4);
  if (length > kMaxPayload) {
    result.why = fmt::format("length {} over the limit", length);
    return result;
  }
  if (bytes.size() - at - kHeaderBytes < length) {
    result.incomplete = true;
    result.why = "incomplete payload";
    return result;
  }
  if (journal_crc32c(bytes.data() + at + kHeaderBytes, length) != get_u32(bytes, at + 8)) {
    result.why = "checksum mismatch";
    return result;
  }
  result.valid = true;
  result.size = kHeaderBytes + length;
  return result;
}

// Whether any valid record starts after `from` (then an invalid record is corruption).
bool valid_record_after(const std::string& bytes, std::size_t from) {
  for (std::size_t at = bytes.find("DLXJ", from); at != std::string::npos; at = bytes.find("DLXJ", at + 1)) {
    if (probe(bytes, at).valid) return true;
  }
  return false;
}

}  // namespace

std::string encode_journal_record(const nlohmann::json& event) {
  std::string payload = event.dump();
  if (payload.size() > kMaxPayload) throw JournalError(fmt::format("journal event of {} bytes is too large", payload.size()));
  std::string record;
  record.reserve(kHeaderBytes + payload.size());
  put_u32(record, kMagic);
  put_u32(record, static_cast<std::uint32_t>(payload.size()));
  put_u32(record, journal_crc32c(payload.data(), payload.size()));
  return record + payload;
}

std::optional<RecordStamp> stamp_journal_record(const std::string& bytes, std::size_t at, std::uint64_t base) {
  if (at > bytes.size()) return std::nullopt;
  const Probe record = probe(bytes, at);
  if (!record.valid) return std::nullopt;
  return RecordStamp{base + at, record.size, get_u32(bytes, at + 8)};
}

JournalScan scan_journal(const std::string& bytes, std::uint64_t base) {
  JournalScan scan;
  scan.file_size = base + bytes.size();
  std::unordered_set<std::string> ids;  // hashed: a tree of 30,000 ids was 5% of a full replay
  std::size_t at = 0;
  while (at < bytes.size()) {
    Probe record = probe(bytes, at);
    if (!record.valid) {
      if (record.incomplete || !valid_record_after(bytes, at + 1)) {
        scan.torn_tail = true;
      } else {
        scan.corruption = fmt::format("invalid record at offset {} ({}) with valid records after it",
                                      base + at, record.why);
      }
      break;
    }
    nlohmann::json event = nlohmann::json::parse(bytes.begin() + static_cast<long>(at + kHeaderBytes),
                                                 bytes.begin() + static_cast<long>(at + record.size), nullptr, false);
    if (event.is_discarded() || !event.is_object() || !event.contains("id") || !event["id"].is_string()) {
      scan.corruption = fmt::format("record at offset {} is not a journal event", base + at);
      break;
    }
    scan.last = RecordStamp{base + at, record.size, get_u32(bytes, at + 8)};
    if (ids.insert(event["id"].get<std::string>()).second) {
      scan.records.push_back({base + at, std::move(event)});
    } else {
      ++scan.duplicates;
    }
    at += record.size;
  }
  scan.valid_end = base + at;
  return scan;
}

}  // namespace dlx::searcher
