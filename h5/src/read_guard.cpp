// SPDX-License-Identifier: Apache-2.0
#include "dlx/h5/read_guard.hpp"

#include <fmt/format.h>

#include "dlx/h5/error.hpp"
#include "dlx/h5/limits.hpp"
#include "dlx/h5/objects.hpp"

namespace dlx::h5 {

ReadGuard::ReadGuard(std::filesystem::path file, std::uint64_t file_bytes, std::string kind)
    : file_(std::move(file)), file_bytes_(file_bytes), kind_(std::move(kind)) {}

void ReadGuard::count(std::string_view where) {
  if (++objects_ > kMaxObjects)
    refuse(fmt::format("more than {} links and attributes (dlx's limit), at {}", kMaxObjects,
                       where));
}

void ReadGuard::visit(const H5O_info_t& info, const std::string& path) {
  auto [first, inserted] = reached_.emplace(info.addr, path);
  if (!inserted)
    refuse(fmt::format("{} is a second link to {} (a hard-link cycle or a shared object; a "
                       "reader reaches each object once)",
                       path, first->second));
}

void ReadGuard::take(std::uint64_t bytes, std::string_view what) {
  if (bytes > file_bytes_ - taken_)
    refuse(fmt::format("{} brings the data read to more than the file's {} bytes (objects that "
                       "share or overlap their bytes)",
                       what, file_bytes_));
  taken_ += bytes;
}

void ReadGuard::refuse(std::string_view problem) const {
  throw H5Error(fmt::format("{}: not a {}: {}", file_.string(), kind_, problem));
}

std::string child_path(const std::string& group_path, const std::string& name) {
  return group_path.ends_with('/') ? group_path + name : group_path + "/" + name;
}

namespace {

void require_plain_name(const std::string& name, const std::string& group_path,
                        const ReadGuard& guard) {
  if (name.empty() || name == "." || name.find('/') != std::string::npos)
    guard.refuse(fmt::format("link name '{}' in {} is not a plain name", name, group_path));
}

void require_hard(H5L_type_t type, const std::string& path, const ReadGuard& guard) {
  if (type != H5L_TYPE_HARD)
    guard.refuse(fmt::format("{} is {} (only hard links are followed)",
                             path, link_kind(type)));
}

}  // namespace

std::vector<std::string> member_names(hid_t group, const std::string& group_path, ReadGuard& guard) {
  std::vector<std::string> names;
  for (auto& entry : links(group, guard.file())) {
    auto path = child_path(group_path, entry.name);
    guard.count(path);
    require_plain_name(entry.name, group_path, guard);
    require_hard(entry.type, path, guard);
    names.push_back(std::move(entry.name));
  }
  return names;
}

Member open_member(hid_t group, const std::string& group_path, const std::string& name,
                   ReadGuard& guard) {
  Member member;
  member.path = child_path(group_path, name);
  require_plain_name(name, group_path, guard);
  if (!has_link(group, name, guard.file())) guard.refuse(member.path + " is missing");
  H5L_info_t link{};
  check(H5Lget_info(group, name.c_str(), &link, H5P_DEFAULT), guard.file(),
        "inspect the link " + member.path);
  require_hard(link.type, member.path, guard);
  // A hard link of one plain name: neither call below follows anything else.
  H5O_info_t info{};
  check(H5Oget_info_by_name2(group, name.c_str(), &info, H5O_INFO_BASIC, H5P_DEFAULT), guard.file(),
        "inspect " + member.path);
  guard.visit(info, member.path);
  member.type = info.type;
  member.object = Handle(check_id(H5Oopen(group, name.c_str(), H5P_DEFAULT), guard.file(),
                                  "open " + member.path),
                         H5Oclose);
  return member;
}

namespace {

Handle open_typed_member(hid_t group, const std::string& group_path, const std::string& name,
                         H5O_type_t type, std::string_view kind, ReadGuard& guard) {
  auto path = child_path(group_path, name);
  require_plain_name(name, group_path, guard);
  if (!has_link(group, name, guard.file())) guard.refuse(fmt::format("missing {} {}", kind, path));
  auto member = open_member(group, group_path, name, guard);
  if (member.type != type) guard.refuse(fmt::format("{} is not a {}", path, kind));
  return std::move(member.object);
}

}  // namespace

Handle open_group_member(hid_t group, const std::string& group_path, const std::string& name,
                         ReadGuard& guard) {
  return open_typed_member(group, group_path, name, H5O_TYPE_GROUP, "group", guard);
}

Handle open_dataset_member(hid_t group, const std::string& group_path, const std::string& name,
                           ReadGuard& guard) {
  return open_typed_member(group, group_path, name, H5O_TYPE_DATASET, "dataset", guard);
}

Handle open_root(hid_t file_id, ReadGuard& guard) {
  auto root = open_root_group(file_id, guard.file());
  H5O_info_t info{};
  check(H5Oget_info2(root.get(), &info, H5O_INFO_BASIC), guard.file(), "inspect the root group");
  guard.visit(info, "/");
  return root;
}

}  // namespace dlx::h5
