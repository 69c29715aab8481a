// SPDX-License-Identifier: Apache-2.0
#include "summary_code.hpp"

#include <fmt/format.h>

#include "dlx/h5/attributes.hpp"
#include "dlx/h5/objects.hpp"
#include "dlx/common/durable_file.hpp"
#include "dlx/store/code_info.hpp"
#include "h5_table.hpp"

namespace dlx::summary::detail {


namespace {

// experiment.h5 is rewritten at every searcher event: a large diff stays in code.diff only.
constexpr std::size_t kMaxDiffInSummary = std::size_t{1} << 20;

}  // namespace

void write_code_group(hid_t root, const std::filesystem::path& experiment_dir, const std::filesystem::path& file) {
  const auto info = store::read_code_info(experiment_dir);
  if (!info) return;
  auto code = h5::create_group(root, "code", file);
  h5::write_attribute(code.get(), "source", info->value("source", ""), file);
  h5::write_attribute(code.get(), "workdir", info->value("workdir", ""), file);
  h5::write_attribute(code.get(), "files", std::int64_t{info->value("files", std::int64_t{0})}, file);
  h5::write_attribute(code.get(), "bytes", std::uint64_t{info->value("bytes", std::uint64_t{0})}, file);
  h5::write_flag_attribute(code.get(), "git", info->value("git", false), file);
  if (!info->value("git", false)) return;
  h5::write_attribute(code.get(), "commit", info->value("commit", ""), file);
  h5::write_attribute(code.get(), "branch", info->value("branch", ""), file);
  h5::write_attribute(code.get(), "remote", info->value("remote", ""), file);
  h5::write_flag_attribute(code.get(), "dirty", info->value("dirty", false), file);
  write_text(code.get(), "status", info->value("status", ""), file);
  const auto diff_path = experiment_dir / store::kCodeDiffFileName;
  std::error_code error;
  const auto diff_size = std::filesystem::file_size(diff_path, error);
  // experiment.h5 is the group's to read: a diff the owner kept to themselves (the snapshot holds a
  // file the group could not read, store/code_snapshot.hpp) stays out of it.
  const auto diff_perms = std::filesystem::status(diff_path, error).permissions();
  if (!error && (diff_perms & std::filesystem::perms::group_read) == std::filesystem::perms::none) {
    h5::write_attribute(code.get(), "diff_note",
                        fmt::format("{} bytes, readable by the experiment's owner only: see {} beside this file",
                                    diff_size, store::kCodeDiffFileName),
                        file);
  } else if (!error && diff_size <= kMaxDiffInSummary) {
    write_text(code.get(), "diff", read_small_file(diff_path, kMaxDiffInSummary), file);
  } else if (!error) {
    h5::write_attribute(code.get(), "diff_note",
                        fmt::format("{} bytes: see {} beside this file", diff_size, store::kCodeDiffFileName), file);
  }
}

}  // namespace dlx::summary::detail
