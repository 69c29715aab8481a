// SPDX-License-Identifier: Apache-2.0
#include "dlx/h5/objects.hpp"

#include <fmt/format.h>

#include "dlx/h5/error.hpp"
#include "dlx/h5/limits.hpp"

namespace dlx::h5 {

std::uint64_t file_bytes_of(hid_t object, const std::filesystem::path& file) {
  Handle owner(check_id(H5Iget_file_id(object), file, "find the file of an object"), H5Fclose);
  hsize_t size = 0;
  check(H5Fget_filesize(owner.get(), &size), file, "read the size of the file");
  return size;
}

Handle open_root_group(hid_t file_id, const std::filesystem::path& file) {
  return Handle(check_id(H5Gopen2(file_id, "/", H5P_DEFAULT), file, "open the root group"),
                H5Gclose);
}

Handle create_group(hid_t parent, const std::string& name, const std::filesystem::path& file) {
  Handle properties(check_id(H5Pcreate(H5P_GROUP_CREATE), file, "create group properties"),
                    H5Pclose);
  check(H5Pset_attr_creation_order(properties.get(), H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED),
        file, "track attribute creation order");
  return Handle(
      check_id(H5Gcreate2(parent, name.c_str(), H5P_DEFAULT, properties.get(), H5P_DEFAULT), file,
               "create " + describe("group", parent, name)),
      H5Gclose);
}

Handle open_group(hid_t parent, const std::string& name, const std::filesystem::path& file) {
  if (!has_link(parent, name, file))
    throw_format_error(
        file, fmt::format("missing {}", describe("group", parent, name)));
  require_hard_link(parent, name, file);
  return Handle(check_id(H5Gopen2(parent, name.c_str(), H5P_DEFAULT), file,
                         "open " + describe("group", parent, name)),
                H5Gclose);
}

bool has_link(hid_t parent, const std::string& name, const std::filesystem::path& file) {
  // H5Lexists does not follow the last link of `name`, only the ones before it (none here).
  return check_tri(H5Lexists(parent, name.c_str(), H5P_DEFAULT), file,
                   "look up " + describe("link", parent, name)) > 0;
}

std::string_view link_kind(H5L_type_t type) {
  switch (type) {
    case H5L_TYPE_HARD: return "a hard link";
    case H5L_TYPE_SOFT: return "a soft link";
    case H5L_TYPE_EXTERNAL: return "an external link";
    default: return "a user-defined link";
  }
}

void require_hard_link(hid_t parent, const std::string& name, const std::filesystem::path& file) {
  if (name.empty() || name == "." || name.find('/') != std::string::npos)
    throw_format_error(file, fmt::format("link name '{}' below {} is not a plain name", name,
                                         object_path(parent)));
  H5L_info_t info{};
  check(H5Lget_info(parent, name.c_str(), &info, H5P_DEFAULT), file,
        "inspect " + describe("link", parent, name));
  if (info.type != H5L_TYPE_HARD)
    throw_format_error(file, fmt::format("{} is {} (only hard links are followed)",
                                         describe("object", parent, name), link_kind(info.type)));
}

std::string object_path(hid_t object) {
  auto length = H5Iget_name(object, nullptr, 0);
  if (length <= 0) {
    H5Eclear2(H5E_DEFAULT);
    return "?";
  }
  std::string path(static_cast<std::size_t>(length), '\0');
  if (H5Iget_name(object, path.data(), path.size() + 1) < 0) {
    H5Eclear2(H5E_DEFAULT);
    return "?";
  }
  return path;
}

std::string describe(std::string_view kind, hid_t parent, const std::string& name) {
  auto parent_path = object_path(parent);
  if (kind == "attribute") return fmt::format("attribute '{}' of {}", name, parent_path);
  return fmt::format("{} {}{}{}", kind, parent_path, parent_path.ends_with('/') ? "" : "/", name);
}

namespace {

struct LinkCollector {
  std::vector<LinkEntry> entries;
  bool too_many = false;
};

herr_t collect_link(hid_t, const char* name, const H5L_info_t* info, void* data) {
  auto* collector = static_cast<LinkCollector*>(data);
  if (collector->entries.size() >= kMaxObjects) {
    collector->too_many = true;
    return 1;  // stop: the caller refuses the group
  }
  collector->entries.push_back({name, info->type});
  return 0;
}

}  // namespace

std::vector<LinkEntry> links(hid_t group, const std::filesystem::path& file) {
  // One pass over the group's own index (H5Literate). Asking for the i-th name n times would
  // rebuild and sort the whole table each time in compact and old-style groups: quadratic.
  LinkCollector collector;
  hsize_t position = 0;
  check(H5Literate(group, H5_INDEX_NAME, H5_ITER_INC, &position, collect_link, &collector), file,
        "list the members of " + object_path(group));
  if (collector.too_many)
    throw_format_error(file, fmt::format("group {} has more than {} links (dlx's limit)",
                                         object_path(group), kMaxObjects));
  return std::move(collector.entries);
}

std::vector<std::string> link_names(hid_t group, const std::filesystem::path& file) {
  std::vector<std::string> names;
  for (auto& entry : links(group, file)) names.push_back(std::move(entry.name));
  return names;
}

}  // namespace dlx::h5
