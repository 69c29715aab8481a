// SPDX-License-Identifier: Apache-2.0
// Encoding and scanning of journal records (the format is described in journal.hpp).
//
// The scan is linear in the file's size, whatever its bytes. Each valid record is checksummed
// once. At the first invalid record the scan stops, and tells a torn tail (nothing valid after it:
// truncated by the next writer) from corruption (a valid record after it: never truncated) by
// looking for a valid record further on: every "DLXJ" with a plausible length is a candidate, and
// checking one costs its payload. Real records never overlap, and a "DLXJ" inside a real record's
// JSON has a length of at least 0x20202020 (JSON text holds no bytes below 0x20), over the limit,
// so that search checksums at most the bytes left, once. Crafted bytes can overlap candidates (a
// "DLXJ" header every 12 bytes, each claiming 1 MiB: 14 s for `dlx replay` of 8 MiB, quadratic),
// so the search stops after checksumming the bytes left plus one largest record; then it cannot
// say, and the invalid record counts as corruption: nothing is truncated, writers refuse to append
// and readers report it. No torn write leaves such bytes.
#include <cstring>
#include <unordered_set>

#include <fmt/format.h>

#include "dlx/common/crc32c.hpp"
#include "dlx/common/little_endian.hpp"
#include "dlx/searcher/journal.hpp"
#include "json_limits.hpp"

namespace dlx::searcher {

namespace {

constexpr std::uint32_t kMagic = 0x4A584C44;  // "DLXJ" read as little-endian
constexpr std::size_t kHeaderBytes = 12;
constexpr std::uint32_t kMaxPayload = 1 << 20;


std::uint32_t get_u32(const std::string& bytes, std::size_t at) { return read_little_endian<std::uint32_t>(bytes, at); }

// The record at `at`: its payload length, or the reason it is invalid.
struct Probe {
  bool valid = false;
  std::size_t size = 0;         // header + payload when valid
  std::size_t checksummed = 0;  // payload bytes whose CRC was computed
  const char* why = "";
};

Probe probe(const std::string& bytes, std::size_t at) {
  Probe result;
  if (bytes.size() - at < kHeaderBytes) {
    result.why = "incomplete header";
    return result;
  }
  if (get_u32(bytes, at) != kMagic) {
    result.why = "bad magic";
    return result;
  }
  std::uint32_t length = get_u32(bytes, at + 4);
  if (length > kMaxPayload) {
    result.why = "length over the 1 MiB limit";
    return result;
  }
  if (bytes.size() - at - kHeaderBytes < length) {
    result.why = "incomplete payload";
    return result;
  }
  result.checksummed = length;
  if (crc32c(std::string_view(bytes.data() + at + kHeaderBytes, length)) != get_u32(bytes, at + 8)) {
    result.why = "checksum mismatch";
    return result;
  }
  result.valid = true;
  result.size = kHeaderBytes + length;
  return result;
}

// Whether a valid record starts after `from` (then an invalid record is corruption), found with
// at most the bytes left plus one largest record checksummed (the bound explained at the top).
enum class Resync { none, found, undecided };

Resync find_valid_record_after(const std::string& bytes, std::size_t from, std::uint64_t& checksummed) {
  const std::uint64_t budget = (bytes.size() - std::min(from, bytes.size())) + kHeaderBytes + kMaxPayload;
  std::uint64_t spent = 0;
  for (std::size_t at = bytes.find("DLXJ", from); at != std::string::npos; at = bytes.find("DLXJ", at + 1)) {
    const Probe candidate = probe(bytes, at);
    spent += candidate.checksummed;
    checksummed += candidate.checksummed;
    if (candidate.valid) return Resync::found;
    if (spent > budget) return Resync::undecided;
  }
  return Resync::none;
}

// A payload that is a journal event: a JSON object with a string "id", nested no deeper than JSON
// the searcher writes (json_limits.hpp). Discarded otherwise.
nlohmann::json parse_event(const std::string& bytes, std::size_t from, std::size_t to) {
  nlohmann::json event = detail::parse_json_within<nlohmann::json>(std::string_view(bytes).substr(from, to - from),
                                                                   detail::kMaxJsonDepth);
  if (event.is_discarded() || !event.is_object() || !event.contains("id") || !event["id"].is_string()) {
    return nlohmann::json(nlohmann::json::value_t::discarded);
  }
  return event;
}

}  // namespace

std::string encode_journal_record(const nlohmann::json& event) {
  std::string payload = event.dump();
  if (payload.size() > kMaxPayload) throw JournalError(fmt::format("journal event of {} bytes is too large", payload.size()));
  std::string record;
  record.reserve(kHeaderBytes + payload.size());
  append_little_endian(record, kMagic);
  append_little_endian(record, static_cast<std::uint32_t>(payload.size()));
  append_little_endian(record, crc32c(payload));
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
    scan.checksummed_bytes += record.checksummed;
    if (!record.valid) {
      // Incomplete too: a length field damaged upwards makes a middle record run past the end,
      // and the valid records inside its claimed range must not be cut as a torn tail.
      const Resync after = find_valid_record_after(bytes, at + 1, scan.checksummed_bytes);
      if (after == Resync::none) {
        scan.torn_tail = true;
      } else if (after == Resync::found) {
        scan.corruption = fmt::format("invalid record at offset {} ({}) with valid records after it",
                                      base + at, record.why);
      } else {
        scan.corruption = fmt::format("invalid record at offset {} ({}) followed by more record headers than "
                                      "a torn write leaves (damaged or crafted bytes)",
                                      base + at, record.why);
      }
      break;
    }
    nlohmann::json event = parse_event(bytes, at + kHeaderBytes, at + record.size);
    if (event.is_discarded()) {
      scan.corruption = fmt::format("record at offset {} is not a journal event (a JSON object with a string "
                                    "\"id\", nested at most {} levels)", base + at, detail::kMaxJsonDepth);
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
