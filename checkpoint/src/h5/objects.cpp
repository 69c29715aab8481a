#include "dlx/checkpoint/h5/objects.hpp"

#include <fmt/format.h>

#include "dlx/checkpoint/h5/error.hpp"

namespace dlx::checkpoint::h5 {

Handle create_file(const std::filesystem::path& path, const FileOptions& options) {
  Handle access(check_id(H5Pcreate(H5P_FILE_ACCESS), path, "create file access properties"),
                H5Pclose);
  // Semi: closing the file fails (is reported) if an object inside it were still open.
  check(H5Pset_fclose_degree(access.get(), H5F_CLOSE_SEMI), path, "set file close degree");
  if (options.checksummed_metadata)
    check(H5Pset_libver_bounds(access.get(), H5F_LIBVER_V18, H5F_LIBVER_LATEST), path,
          "choose the checksummed file format");
  if (options.alignment > 0)
    check(H5Pset_alignment(access.get(), 64 * 1024, options.alignment), path, "set alignment");
  Handle creation(check_id(H5Pcreate(H5P_FILE_CREATE), path, "create file creation properties"),
                  H5Pclose);
  check(H5Pset_attr_creation_order(creation.get(), H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED),
        path, "track attribute creation order");
  return Handle(check_id(H5Fcreate(path.c_str(), H5F_ACC_EXCL, creation.get(), access.get()), path,
                         "create HDF5 file"),
                H5Fclose);
}

Handle open_file_read_only(const std::filesystem::path& path) {
  return Handle(check_id(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), path,
                         "open HDF5 file (damaged or truncated?)"),
                H5Fclose);
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
        file, fmt::format("missing {} (not a dlx trial record?)", describe("group", parent, name)));
  return Handle(check_id(H5Gopen2(parent, name.c_str(), H5P_DEFAULT), file,
                         "open " + describe("group", parent, name)),
                H5Gclose);
}

bool has_link(hid_t parent, const std::string& name, const std::filesystem::path& file) {
  return check_tri(H5Lexists(parent, name.c_str(), H5P_DEFAULT), file,
                   "look up " + describe("link", parent, name)) > 0;
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

std::vector<std::string> link_names(hid_t group, const std::filesystem::path& file) {
  H5G_info_t info{};
  check(H5Gget_info(group, &info), file, "list group members");
  std::vector<std::string> names;
  names.reserve(info.nlinks);
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    auto length =
        H5Lget_name_by_idx(group, ".", H5_INDEX_NAME, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
    if (length < 0) throw_error(file, "read a group member name");
    std::string name(static_cast<std::size_t>(length), '\0');
    if (H5Lget_name_by_idx(group, ".", H5_INDEX_NAME, H5_ITER_INC, i, name.data(), name.size() + 1,
                           H5P_DEFAULT) < 0)
      throw_error(file, "read a group member name");
    names.push_back(std::move(name));
  }
  return names;
}

}  // namespace dlx::checkpoint::h5
