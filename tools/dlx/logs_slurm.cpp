// SPDX-License-Identifier: Apache-2.0
#include "logs_slurm.hpp"

#include <charconv>
#include <chrono>
#include <cstdint>
#include <system_error>

#include <fmt/format.h>

#include "dlx/common/bounded_command.hpp"

namespace dlx::cli {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_key_char(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == ':' || c == '/'; }

// Whether a field "Key=" starts at `at` (just after a space).
bool key_at(std::string_view line, std::size_t at) {
  std::size_t i = at;
  while (i < line.size() && is_key_char(line[i])) ++i;
  return i > at && i < line.size() && line[i] == '=';
}

std::string field(const JobFields& job, const std::string& key) {
  const auto found = job.find(key);
  if (found == job.end() || found->second == "N/A" || found->second == "(null)") return "";
  return found->second;
}

std::string padded(const std::string& value, int width) {
  if (width <= 0 || value.empty() || value.size() >= static_cast<std::size_t>(width)) return value;
  for (char c : value) if (!is_digit(c)) return value;
  return std::string(static_cast<std::size_t>(width) - value.size(), '0') + value;
}

// The first host of a node list: "n[1-3],m4" -> "n1".
std::string first_node(const std::string& nodes) {
  std::string out;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i] == ',') break;
    if (nodes[i] == '[') {
      for (++i; i < nodes.size() && is_digit(nodes[i]); ++i) out += nodes[i];
      break;
    }
    out += nodes[i];
  }
  return out;
}

// One line of scontrol's text as Key=Value fields. A value runs to the next " Key=" (so paths with
// spaces survive as long as no word in them looks like "Key="); the first of a key wins.
JobFields line_fields(std::string_view line) {
  JobFields fields;
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  std::size_t at = 0;
  while (at < line.size()) {
    while (at < line.size() && line[at] == ' ') ++at;
    const auto equals = line.find('=', at);
    if (equals == std::string_view::npos) break;
    std::size_t end = equals + 1;
    while (end < line.size() && !(line[end] == ' ' && key_at(line, end + 1))) ++end;
    fields.emplace(std::string(line.substr(at, equals - at)), std::string(line.substr(equals + 1, end - equals - 1)));
    at = end;
  }
  return fields;
}

}  // namespace

std::optional<JobFields> parse_scontrol_text(std::string_view text) {
  // The keys whose values decide what is opened, and as whom: each must start exactly one line.
  static const char* const kLineKeys[] = {"StdOut", "StdErr", "WorkDir", "UserId"};
  JobFields fields;
  std::map<std::string, int> starts;
  bool first_line = true;
  for (std::string_view rest = text; !rest.empty();) {
    const auto end = rest.find('\n');
    std::string_view line = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
    const auto equals = line.find('=');
    if (equals == std::string_view::npos) continue;
    const std::string key(line.substr(0, equals));
    const auto on_line = line_fields(line);
    if (first_line) {
      // "JobId=45 ArrayJobId=40 ArrayTaskId=5 JobName=...": only for the filename patterns.
      for (const auto& [name, value] : on_line) fields.emplace(name, value);
      first_line = false;
    }
    for (const char* line_key : kLineKeys) {
      if (key != line_key) continue;
      ++starts[key];
      fields[key] = on_line.at(key);
    }
    for (const char* other : {"NodeList", "BatchHost"}) {
      if (key == other) fields[key] = on_line.at(key);  // over what the first line's name may have said
    }
  }
  for (const char* line_key : kLineKeys) {
    if (starts[line_key] != 1) return std::nullopt;
  }
  return fields;
}

std::optional<uid_t> job_uid(const JobFields& job) {
  const auto found = job.find("UserId");
  if (found == job.end()) return std::nullopt;
  const auto& value = found->second;
  const auto open = value.rfind('(');
  if (open == std::string::npos || value.empty() || value.back() != ')') return std::nullopt;
  const char* first = value.data() + open + 1;
  const char* last = value.data() + value.size() - 1;
  std::uint32_t uid = 0;
  const auto [end, error] = std::from_chars(first, last, uid);
  if (error != std::errc() || end != last || first == last || uid == static_cast<std::uint32_t>(-1)) {
    return std::nullopt;  // not a number, or (uid_t)-1, which no user has
  }
  return static_cast<uid_t>(uid);
}

std::string expand_output_pattern(std::string_view pattern, const JobFields& job) {
  std::string user = field(job, "UserId");
  user = user.substr(0, user.find('('));
  const std::string job_id = field(job, "JobId");
  std::string array_job = field(job, "ArrayJobId");
  std::string array_task = field(job, "ArrayTaskId");
  if (array_job.empty()) array_job = job_id;
  if (array_task.empty()) array_task = "4294967294";  // what sbatch writes for %a outside an array
  // sbatch: a backslash anywhere turns the expansion off (and is itself dropped).
  const bool literal = pattern.find('\\') != std::string_view::npos;
  std::string out;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (literal) {
      if (pattern[i] != '\\') out += pattern[i];
      continue;
    }
    if (pattern[i] != '%' || i + 1 == pattern.size()) {
      out += pattern[i];
      continue;
    }
    std::size_t j = i + 1;
    int width = 0;
    while (j < pattern.size() && is_digit(pattern[j]) && width < 10) width = width * 10 + (pattern[j++] - '0');
    if (j == pattern.size()) {
      out += pattern.substr(i);
      break;
    }
    switch (pattern[j]) {
      case '%': out += '%'; break;
      case 'A': out += padded(array_job, width); break;
      case 'a': out += padded(array_task, width); break;
      case 'j': out += padded(job_id, width); break;
      case 'J': out += padded(job_id, width) + ".batch"; break;
      case 'x': out += field(job, "JobName"); break;
      case 'u': out += user; break;
      case 'N': out += first_node(field(job, "BatchHost").empty() ? field(job, "NodeList") : field(job, "BatchHost")); break;
      case 'n': case 't': out += padded("0", width); break;
      case 's': out += "batch"; break;
      default: out += pattern.substr(i, j - i + 1); break;  // unknown: as Slurm leaves it
    }
    i = j;
  }
  std::filesystem::path path(out);
  if (path.is_relative() && !field(job, "WorkDir").empty()) path = std::filesystem::path(field(job, "WorkDir")) / path;
  return path.string();
}

bool is_job_id(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size() && is_digit(text[i])) ++i;
  if (i == 0 || i > 10) return false;
  if (i == text.size()) return true;
  if (text[i] != '_') return false;
  const std::size_t task = ++i;
  while (i < text.size() && is_digit(text[i])) ++i;
  return i > task && i - task <= 10 && i == text.size();
}

std::optional<SlurmOutput> slurm_output_files(const std::string& job_id, std::string& why_not) {
  if (!is_job_id(job_id)) {  // never into scontrol's options
    why_not = fmt::format("{} is not a Slurm job id", job_id);
    return std::nullopt;
  }
  CommandLimits limits;
  limits.timeout = std::chrono::seconds(30);
  limits.max_output = std::size_t{4} << 20;
  std::optional<JobFields> job;
  try {
    const auto text = run_bounded({"scontrol", "show", "job", job_id}, limits, {{"LC_ALL", "C"}});
    if (text.exit_code != 0) {
      why_not = fmt::format("Slurm no longer knows job {}", job_id);
      return std::nullopt;
    }
    job = parse_scontrol_text(text.out);
  } catch (const CommandError& e) {
    why_not = e.what();
    return std::nullopt;
  }
  if (!job) {
    why_not = fmt::format("scontrol's description of job {} does not give its output file, error file, working "
                          "directory and user exactly once each at the start of a line (a job name, comment or path "
                          "with a line break in it?): not used",
                          job_id);
    return std::nullopt;
  }
  const auto uid = job_uid(*job);
  const auto out = field(*job, "StdOut");
  if (!uid || out.empty()) {
    why_not = fmt::format("Slurm names no output file or user for job {}", job_id);
    return std::nullopt;
  }
  SlurmOutput files{job_id, *uid, field(*job, "UserId").substr(0, field(*job, "UserId").rfind('(')),
                    expand_output_pattern(out, *job), std::nullopt};
  if (const auto err = field(*job, "StdErr"); !err.empty()) {
    std::filesystem::path err_path = expand_output_pattern(err, *job);
    if (err_path != files.stdout_path) files.stderr_path = err_path;
  }
  return files;
}

}  // namespace dlx::cli
