// SPDX-License-Identifier: Apache-2.0
#pragma once
// The bookkeeping of one reader over one file, so that whatever the file declares, reading it
// costs no more than its size: each object is reached once (a hard-link cycle, or one object
// under two names, is refused: dlx writes every object once), at most kMaxObjects links and
// attributes are looked at, and the data read (datasets, strings) adds up to at most the file's
// size (dlx's objects never share or overlap their bytes). All checks are O(1) per object.
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "dlx/h5/handle.hpp"

namespace dlx::h5 {

class ReadGuard {
 public:
  // `kind`: what the file should be ("dlx checkpoint", "dlx trial record"), for messages.
  ReadGuard(std::filesystem::path file, std::uint64_t file_bytes, std::string kind);

  const std::filesystem::path& file() const noexcept { return file_; }
  std::uint64_t file_bytes() const noexcept { return file_bytes_; }

  // One more link or attribute looked at; refuses the one past kMaxObjects.
  void count(std::string_view where);
  // Records that `path` reached the object `info` describes; refuses a second path to it.
  void visit(const H5O_info_t& info, const std::string& path);
  // `bytes` more of the file's data read into memory; refuses a total above the file's size.
  void take(std::uint64_t bytes, std::string_view what);
  // Throws H5Error "<file>: not a <kind>: <problem>".
  [[noreturn]] void refuse(std::string_view problem) const;

 private:
  std::filesystem::path file_;
  std::uint64_t file_bytes_ = 0;
  std::uint64_t taken_ = 0;
  std::size_t objects_ = 0;
  std::string kind_;
  std::unordered_map<haddr_t, std::string> reached_;  // object address -> first path to it
};

struct Member {
  Handle object;
  H5O_type_t type = H5O_TYPE_UNKNOWN;
  std::string path;  // "/tensors/model/w", for messages
};

// The hard links directly below `group` (whose path is `group_path`), in name order, each
// counted; a soft, external or user-defined link, or a name that is not one plain path
// component, is refused with its path.
std::vector<std::string> member_names(hid_t group, const std::string& group_path, ReadGuard& guard);

// Opens the object behind the hard link `name` below `group`, refusing any other kind of link
// and an object reached before. `name` must exist (member_names, or has_link first).
Member open_member(hid_t group, const std::string& group_path, const std::string& name,
                   ReadGuard& guard);

// open_member for an object that must be a group (a dataset): "missing group <path>" when there is
// no such link, "<path> is not a group" when it leads elsewhere.
Handle open_group_member(hid_t group, const std::string& group_path, const std::string& name,
                         ReadGuard& guard);
Handle open_dataset_member(hid_t group, const std::string& group_path, const std::string& name,
                           ReadGuard& guard);

// The root group of `file_id`, recorded as reached (so that a link back to it is a cycle).
Handle open_root(hid_t file_id, ReadGuard& guard);

// "/a" + "b" -> "/a/b"; "/" + "b" -> "/b".
std::string child_path(const std::string& group_path, const std::string& name);

}  // namespace dlx::h5
