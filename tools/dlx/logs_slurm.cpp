#include "logs_slurm.hpp"

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <memory>

#include <fmt/format.h>

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

std::string field(const std::map<std::string, std::string>& job, const std::string& key) {
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

}  // namespace

std::map<std::string, std::string> parse_scontrol_fields(std::string_view line) {
  std::map<std::string, std::string> fields;
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

std::string expand_output_pattern(std::string_view pattern, const std::map<std::string, std::string>& job) {
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

std::optional<SlurmOutput> slurm_output_files(const std::string& job_id) {
  if (!is_job_id(job_id)) return std::nullopt;  // never into the shell
  const auto command = fmt::format("scontrol show job -o {} 2>/dev/null", job_id);
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen(command.c_str(), "r"), ::pclose);
  if (!pipe) return std::nullopt;
  std::string output;
  std::array<char, 4096> buffer{};
  std::size_t n = 0;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe.get())) > 0 && output.size() < (1 << 20)) {
    output.append(buffer.data(), n);
  }
  const auto line = std::string_view(output).substr(0, output.find('\n'));
  const auto job = parse_scontrol_fields(line);
  const auto out = field(job, "StdOut");
  if (out.empty()) return std::nullopt;
  SlurmOutput files{job_id, expand_output_pattern(out, job), std::nullopt};
  if (const auto err = field(job, "StdErr"); !err.empty()) {
    std::filesystem::path err_path = expand_output_pattern(err, job);
    if (err_path != files.stdout_path) files.stderr_path = err_path;
  }
  return files;
}

}  // namespace dlx::cli
