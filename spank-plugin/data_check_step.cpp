// SPDX-License-Identifier: Apache-2.0
#include "data_check_step.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <future>
#include <memory>
#include <thread>

#include <fmt/format.h>

#include "dlx/common/byte_size.hpp"
#include "dlx/data/stage.hpp"

namespace dlx::spank {

namespace fs = std::filesystem;

namespace {

// Whether the user can read `path` (and enter it, for a directory), with the reason if not: said
// before the walk so that the common mistakes (a typo, another group's dataset) get a plain
// message.
void check_readable(const fs::path& path, const std::string& as_written) {
  std::error_code error;
  const auto status = fs::status(path, error);
  const std::string written =
      as_written == path.string() ? path.string() : fmt::format("{} (written as {})", path.string(), as_written);
  if (error || !fs::exists(status)) {
    throw DataCheckError(fmt::format("data.stage: {}: {} (check the path; relative paths are relative to the "
                                     "experiment file's directory)",
                                     written, error ? error.message() : "no such file or directory"));
  }
  const bool directory = fs::is_directory(status);
  if (!directory && !fs::is_regular_file(status)) {
    throw DataCheckError(fmt::format("data.stage: {} is neither a file nor a directory (stage a file, a directory "
                                     "or an archive)", written));
  }
  if (::access(path.c_str(), directory ? (R_OK | X_OK) : R_OK) != 0) {
    throw DataCheckError(fmt::format("data.stage: {}: you cannot read it: {} (trials stage it as you: ask its owner "
                                     "for read access, or copy it somewhere you can read)",
                                     written, std::strerror(errno)));
  }
}

// data::source_bytes on a thread of its own, given up after `time_limit` (the thread is left to
// finish or to end with sbatch; it touches nothing but the file system's metadata).
std::uint64_t walk_with_limit(const std::vector<fs::path>& sources, std::chrono::milliseconds time_limit) {
  auto task = std::make_shared<std::packaged_task<std::uint64_t()>>([sources] { return data::source_bytes(sources); });
  auto result = task->get_future();
  std::thread([task] { (*task)(); }).detach();
  if (result.wait_for(time_limit) != std::future_status::ready) {
    throw DataCheckError(fmt::format(
        "data.stage: walking the datasets took more than {} s (is the file system slow, or a dataset millions of "
        "files? stage an archive of it, e.g. a .tar, which counts as one file)",
        std::chrono::duration_cast<std::chrono::seconds>(time_limit).count()));
  }
  try {
    return result.get();
  } catch (const data::DataError& e) {
    throw DataCheckError(fmt::format("data.stage: {}", e.what()));
  }
}

}  // namespace

std::uint64_t check_data(config::Experiment& experiment, std::chrono::milliseconds time_limit) {
  auto& data = experiment.data;
  if (data.stage.empty()) return 0;
  const fs::path experiment_dir = fs::absolute(fs::path(experiment.source_file)).parent_path();
  std::vector<fs::path> sources;
  for (auto& path : data.stage) {
    const fs::path absolute = (experiment_dir / path).lexically_normal();  // an absolute path replaces the base
    check_readable(absolute, path);
    sources.push_back(absolute);
    path = absolute.string();
  }
  const std::uint64_t total = walk_with_limit(sources, time_limit);
  if (data.max_bytes != 0 && total > data.max_bytes) {
    std::uint64_t biggest_bytes = 0;
    fs::path biggest;
    for (const auto& source : sources) {
      const auto bytes = walk_with_limit({source}, time_limit);
      if (bytes >= biggest_bytes) biggest_bytes = bytes, biggest = source;
    }
    throw DataCheckError(fmt::format("data.stage: the datasets total {}, above the node cache's cap of {}; the "
                                     "biggest: {} ({}) (stage less, or ask your administrator about limits: data: "
                                     "max_bytes)",
                                     format_byte_size(total), format_byte_size(data.max_bytes), biggest.string(),
                                     format_byte_size(biggest_bytes)));
  }
  return total;
}

}  // namespace dlx::spank
