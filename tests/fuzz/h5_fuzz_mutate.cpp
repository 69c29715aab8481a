// SPDX-License-Identifier: Apache-2.0
#include "h5_fuzz_mutate.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string_view>

#include "crc32c.hpp"  // checkpoint/src: the CRCs a tensor's attributes must hold
#include "dlx/checkpoint/checkpoint.hpp"
#include "dlx/h5/handle.hpp"
#include "h5_types.hpp"

namespace dlx::fuzz {
namespace {

using h5::Handle;
namespace fs = std::filesystem;

constexpr const char* kNames[] = {"w", "b", "model", "fc1", "loop", "deep", "steps", "loss",
                                  "accuracy", "val_loss", "state", "tensors", "metrics",
                                  "training", "validation", "hparams", "restart_events", "1", "2",
                                  "x", "zz"};
constexpr const char* kAttributeNames[] = {
    "kind", "format_version", "library_version", "experiment", "trial_id", "step", "epoch",
    "world_size", "created_unix", "hparams_json", "metric_name", "metric_value",
    "metadata_crc32c", "dtype", "crc32c", "crc32c_block_bytes", "state", "exit_code",
    "stop_reason", "restarts", "failures", "nodes", "slurm_job_id", "updated_unix", "cause",
    "reason", "unix_time", "resumed_step", "steps_lost", "seconds_lost", "downtime_seconds",
    "started_from_trial", "started_from_step", "started_from_path", "note", "data_cursor"};
// Extents from harmless to what no file holds: the readers must judge each against the file.
constexpr std::uint64_t kExtents[] = {0, 1, 2, 3, 5, 16, 1000, std::uint64_t{1} << 20,
                                      std::uint64_t{1} << 29, std::uint64_t{1} << 31,
                                      std::uint64_t{1} << 40};
constexpr std::uint64_t kWrittenBytes = 64 * 1024;  // larger datasets are declared, not written

template <std::size_t N>
std::string pick_name(ByteReader& in, const char* const (&names)[N]) {
  return names[in.pick(N)];
}

std::string pick_path(ByteReader& in, const std::vector<std::string>& paths) {
  return paths.empty() ? std::string("/") : paths[in.pick(paths.size())];
}

std::string join(const std::string& parent, const std::string& name) {
  return parent == "/" ? "/" + name : parent + "/" + name;
}

bool under(const std::string& path, const std::string& prefix) {
  return path == prefix || (path.starts_with(prefix) && path.size() > prefix.size() &&
                            (prefix == "/" || path[prefix.size()] == '/'));
}

std::vector<std::string> all_paths(const Tree& tree) {
  auto out = tree.groups;
  out.insert(out.end(), tree.datasets.begin(), tree.datasets.end());
  return out;
}

void forget(Tree& tree, std::map<std::string, ModelTensor>& tensors, const std::string& path) {
  auto gone = [&](const std::string& p) { return under(p, path); };
  std::erase_if(tree.groups, [&](const std::string& p) { return p != "/" && gone(p); });
  std::erase_if(tree.datasets, gone);
  std::erase_if(tensors, [&](const auto& entry) { return gone(entry.first); });
}

// Whether `path` holds a hard link to the root group (Tree::root_links), which is never removed.
bool holds_root_link(const Tree& tree, const std::string& path) {
  return std::any_of(tree.root_links.begin(), tree.root_links.end(),
                     [&](const std::string& link) { return under(link, path); });
}

// Removes whatever `path` names, so that the edit that follows takes its place; false (nothing
// done) when that would remove a hard link to the root group.
bool clear(hid_t file, Tree& tree, std::map<std::string, ModelTensor>& tensors, const std::string& path) {
  if (holds_root_link(tree, path)) return false;
  if (H5Lexists(file, path.c_str(), H5P_DEFAULT) > 0) H5Ldelete(file, path.c_str(), H5P_DEFAULT);
  H5Eclear2(H5E_DEFAULT);
  forget(tree, tensors, path);
  return true;
}

Handle string_type(std::size_t size) {
  Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type.get(), size == 0 ? H5T_VARIABLE : size);
  return type;
}

void write_attribute(hid_t object, const std::string& name, ByteReader& in) {
  if (H5Aexists(object, name.c_str()) > 0) H5Adelete(object, name.c_str());
  const auto kind = in.pick(9);
  hsize_t count = kind == 5 || kind == 7 ? in.u8() : 1;
  Handle space(kind == 8 ? H5Screate(H5S_NULL)
               : count == 1 && kind != 5 && kind != 7 ? H5Screate(H5S_SCALAR)
                                                      : H5Screate_simple(1, &count, nullptr),
               H5Sclose);
  auto create = [&](hid_t type) {
    return Handle(H5Acreate2(object, name.c_str(), type, space.get(), H5P_DEFAULT, H5P_DEFAULT),
                  H5Aclose);
  };
  switch (kind) {
    case 0: case 8: { auto value = in.u64(); auto a = create(H5T_STD_I64LE); if (kind == 0) H5Awrite(a.get(), H5T_NATIVE_UINT64, &value); break; }
    case 1: { auto value = in.u32(); H5Awrite(create(H5T_STD_I32LE).get(), H5T_NATIVE_UINT32, &value); break; }
    case 2: { auto bits = in.u64(); double value; std::memcpy(&value, &bits, sizeof value); H5Awrite(create(H5T_IEEE_F64LE).get(), H5T_NATIVE_DOUBLE, &value); break; }
    case 3: {  // a fixed-length string, now and then a large one (dense attribute storage)
      std::size_t length = in.pick(8) == 0 ? 100000 : 1 + in.pick(64);
      auto text = in.bytes(64);
      std::string value(length, 'x');
      for (std::size_t i = 0; i < value.size() && !text.empty(); ++i) value[i] = text[i % text.size()];
      auto type = string_type(length);
      H5Awrite(create(type.get()).get(), type.get(), value.data());
      break;
    }
    case 4: {
      auto value = in.bytes(in.pick(64));
      std::erase(value, '\0');
      const char* text = value.c_str();
      auto type = string_type(0);
      H5Awrite(create(type.get()).get(), type.get(), &text);
      break;
    }
    case 5: case 7: {
      std::vector<std::uint32_t> values(count);
      for (auto& v : values) v = in.u32();
      if (kind == 5) H5Awrite(create(H5T_STD_U32LE).get(), H5T_NATIVE_UINT32, values.data());
      else H5Awrite(create(H5T_IEEE_F32LE).get(), H5T_NATIVE_UINT32, values.data());  // bits
      break;
    }
    case 6: { std::int8_t value = static_cast<std::int8_t>(in.u8()); H5Awrite(create(H5T_STD_I8LE).get(), H5T_NATIVE_INT8, &value); break; }
  }
}

struct DatasetSpec {
  hid_t type = H5I_INVALID_HID;  // borrowed
  std::vector<hsize_t> dims;
  std::size_t layout = 0;
  std::uint64_t bytes = 0;
  bool fits = false;  // elements x type size did not overflow
};

Handle create_dataset(hid_t file, const std::string& path, DatasetSpec& spec, ByteReader& in,
                      const fs::path& self, std::string* written) {
  const auto& scratch = Scratch::get();
  std::uint64_t elements = 1;
  bool fits = true;
  for (auto d : spec.dims) fits = fits && !__builtin_mul_overflow(elements, d, &elements);
  const std::uint64_t type_size = H5Tget_size(spec.type);
  fits = fits && type_size > 0 && !__builtin_mul_overflow(elements, type_size, &spec.bytes) &&
         spec.bytes < (std::uint64_t{1} << 62);
  spec.fits = fits;
  if (!fits) return {};
  Handle space(spec.dims.empty() ? H5Screate(H5S_SCALAR)
                                 : H5Screate_simple(static_cast<int>(spec.dims.size()),
                                                    spec.dims.data(), nullptr),
               H5Sclose);
  Handle properties(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  const bool small = spec.bytes <= kWrittenBytes;
  bool write = false;
  switch (spec.layout) {
    case 0: H5Pset_layout(properties.get(), H5D_CONTIGUOUS); write = small; break;
    case 1: H5Pset_layout(properties.get(), H5D_CONTIGUOUS);
            H5Pset_alloc_time(properties.get(), H5D_ALLOC_TIME_LATE); break;
    case 2: case 3: {
      if (spec.dims.empty()) break;
      std::vector<hsize_t> chunk(spec.dims.size());
      for (std::size_t i = 0; i < chunk.size(); ++i) chunk[i] = std::clamp<hsize_t>(spec.dims[i], 1, 16);
      H5Pset_chunk(properties.get(), static_cast<int>(chunk.size()), chunk.data());
      if (spec.layout == 3) {
        if (in.pick(2) == 0) H5Pset_deflate(properties.get(), 6);
        write = small;
      }
      break;
    }
    case 4: H5Pset_layout(properties.get(), H5D_COMPACT); write = small; break;
    case 5: {
      const fs::path* targets[] = {&scratch.fifo, &scratch.missing, &scratch.other_file};
      H5Pset_external(properties.get(), targets[in.pick(3)]->c_str(), 0,
                      spec.bytes == 0 ? 1 : spec.bytes);
      break;
    }
    default: {
      const fs::path* sources[] = {&scratch.fifo, &scratch.missing, &scratch.other_file, &self};
      if (!spec.dims.empty())
        H5Pset_virtual(properties.get(), space.get(), sources[in.pick(4)]->c_str(), "/d", space.get());
      break;
    }
  }
  H5Eclear2(H5E_DEFAULT);
  Handle dataset(H5Dcreate2(file, path.c_str(), spec.type, space.get(), H5P_DEFAULT,
                            properties.get(), H5P_DEFAULT),
                 H5Dclose);
  if (dataset && write && spec.bytes > 0 && H5Tis_variable_str(spec.type) == 0) {
    std::string data(spec.bytes, '\0');
    const auto seed = in.u8();
    for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>((i * 131 + seed) & 0x3f);
    if (H5Dwrite(dataset.get(), spec.type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data()) >= 0 &&
        written != nullptr)
      *written = std::move(data);
  }
  H5Eclear2(H5E_DEFAULT);
  return dataset;
}

DatasetSpec read_spec(ByteReader& in, hid_t type) {
  DatasetSpec spec;
  spec.type = type;
  const auto rank = in.pick(4);
  for (std::size_t i = 0; i < rank; ++i) spec.dims.push_back(kExtents[in.pick(std::size(kExtents))]);
  spec.layout = in.pick(7);
  return spec;
}

void add_dataset(hid_t file, const fs::path& self, ByteReader& in, Tree& tree,
                 std::map<std::string, ModelTensor>& tensors, bool as_tensor) {
  std::vector<std::string> parents;
  for (const auto& g : tree.groups)
    if (!as_tensor || under(g, "/tensors")) parents.push_back(g);
  const auto path = join(pick_path(in, parents), pick_name(in, kNames));
  const bool cleared = clear(file, tree, tensors, path);
  const auto dtype = checkpoint::kAllDTypes[in.pick(std::size(checkpoint::kAllDTypes))];
  const hid_t plain[] = {H5T_IEEE_F64LE, H5T_STD_I64LE, H5T_IEEE_F32LE, H5T_STD_U8LE};
  auto own = checkpoint::file_type_of(dtype, self);
  auto variable = string_type(0), fixed = string_type(8);
  hid_t type = own.get();
  if (!as_tensor || in.pick(8) == 0) {  // a type of its own; for a tensor: not its dtype's
    const auto which = in.pick(6);
    type = which < 4 ? plain[which] : which == 4 ? variable.get() : fixed.get();
  }
  auto spec = read_spec(in, type);
  if (!cleared) return;
  std::string written;
  auto dataset = create_dataset(file, path, spec, in, self, &written);
  if (std::getenv("DLX_FUZZ_SHOW") != nullptr)
    std::fprintf(stderr, "  at %s: layout %zu, rank %zu, %s\n", path.c_str(), spec.layout,
                 spec.dims.size(), dataset ? "created" : "not created");
  if (!dataset) return;
  tree.datasets.push_back(path);
  if (!as_tensor) return;
  // The tensor's attributes: right for what was written (or for the declared size, CRCs of
  // nothing when nothing was written), now and then wrong.
  const auto flaws = in.u8();
  const auto dtype_name = (flaws & 1) ? std::string("float128") : std::string(checkpoint::dtype_name(dtype));
  auto fixed_name = string_type(dtype_name.size() + 1);
  Handle scalar(H5Screate(H5S_SCALAR), H5Sclose);
  Handle a(H5Acreate2(dataset.get(), "dtype", fixed_name.get(), scalar.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  H5Awrite(a.get(), fixed_name.get(), dtype_name.c_str());
  std::vector<std::uint32_t> crcs;
  if (!written.empty()) crcs = checkpoint::detail::block_crc32c(std::as_bytes(std::span(written.data(), written.size())), 1);
  else crcs.assign(std::min<std::size_t>(checkpoint::detail::crc_block_count(spec.bytes), 65536), 0);
  if (flaws & 2) crcs.push_back(in.u32());
  if ((flaws & 4) && !crcs.empty()) crcs[0] ^= 1;
  hsize_t count = crcs.size();
  Handle crc_space(H5Screate_simple(1, &count, nullptr), H5Sclose);
  Handle crc(H5Acreate2(dataset.get(), "crc32c", H5T_STD_U32LE, crc_space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  H5Awrite(crc.get(), H5T_NATIVE_UINT32, crcs.data());
  std::uint64_t block = (flaws & 8) ? 4096 : checkpoint::kCrcBlockBytes;
  Handle block_attribute(H5Acreate2(dataset.get(), "crc32c_block_bytes", H5T_STD_U64LE, scalar.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  H5Awrite(block_attribute.get(), H5T_NATIVE_UINT64, &block);
  H5Eclear2(H5E_DEFAULT);
  if (path.starts_with("/tensors/"))
    tensors[path] = {dtype_name, std::vector<std::uint64_t>(spec.dims.begin(), spec.dims.end()), crcs};
}

}  // namespace

const Scratch& Scratch::get() {
  static const Scratch scratch = [] {
    Scratch s;
    const fs::path base = fs::is_directory("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
    auto pattern = (base / "dlx-h5-fuzz.XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) std::abort();
    s.dir = pattern;
    s.fifo = s.dir / "fifo.h5";
    s.other_file = s.dir / "other.h5";
    s.missing = s.dir / "missing.h5";
    if (::mkfifo(s.fifo.c_str(), 0600) != 0) std::abort();
    Handle other(H5Fcreate(s.other_file.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
    hsize_t dims[1] = {4};
    Handle space(H5Screate_simple(1, dims, nullptr), H5Sclose);
    Handle d(H5Dcreate2(other.get(), "d", H5T_IEEE_F32LE, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Dclose);
    return s;
  }();
  // Removed when the fuzzer exits normally (-max_total_time); a crash leaves it for a look.
  static const bool cleanup = [] {
    return std::atexit([] {
      std::error_code ignored;
      fs::remove_all(Scratch::get().dir, ignored);
    }) == 0;
  }();
  static_cast<void>(cleanup);
  return scratch;
}

void quiet_hdf5() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }

void mutate(hid_t file, const fs::path& path, ByteReader& in, Tree& tree,
            std::map<std::string, ModelTensor>& tensors) {
  const auto& scratch = Scratch::get();
  static const bool show = std::getenv("DLX_FUZZ_SHOW") != nullptr;  // each edit, to stderr
  auto say = [&](const char* what, const std::string& a, const std::string& b) {
    if (show) std::fprintf(stderr, "edit: %s %s %s\n", what, a.c_str(), b.c_str());
  };
  const auto edits = in.pick(16);
  for (std::size_t i = 0; i < edits && !in.done(); ++i) {
    switch (in.pick(10)) {
      case 0: {  // hard link to anything known, a group's ancestors included (cycles)
        auto target = pick_path(in, all_paths(tree));
        auto link = join(pick_path(in, tree.groups), pick_name(in, kNames));
        if (under(target, link) || !clear(file, tree, tensors, link)) break;  // its own target
        say("hard link", link, target);
        if (H5Lcreate_hard(file, target.c_str(), file, link.c_str(), H5P_DEFAULT, H5P_DEFAULT) >= 0 &&
            target == "/")
          tree.root_links.push_back(link);
        break;
      }
      case 1: {
        auto link = join(pick_path(in, tree.groups), pick_name(in, kNames));
        const std::string texts[] = {pick_path(in, all_paths(tree)), ".", "..", "/", "a/b",
                                     "/nowhere", link};
        auto target = texts[in.pick(std::size(texts))];
        if (!clear(file, tree, tensors, link)) break;
        say("soft link", link, target);
        H5Lcreate_soft(target.c_str(), file, link.c_str(), H5P_DEFAULT, H5P_DEFAULT);
        break;
      }
      case 2: {
        auto link = join(pick_path(in, tree.groups), pick_name(in, kNames));
        const fs::path* targets[] = {&scratch.fifo, &scratch.missing, &scratch.other_file, &path};
        auto target = targets[in.pick(std::size(targets))];
        auto object = in.pick(2) == 0 ? std::string("/") : pick_path(in, all_paths(tree));
        if (!clear(file, tree, tensors, link)) break;
        say("external link", link, target->string() + ":" + object);
        H5Lcreate_external(target->c_str(), object.c_str(), file, link.c_str(), H5P_DEFAULT, H5P_DEFAULT);
        break;
      }
      case 3: {  // deep nesting: past the readers' limit of 64, up to 300
        auto top = join(pick_path(in, tree.groups), pick_name(in, kNames));
        const int depth = 1 + in.u16() % 300;
        if (!clear(file, tree, tensors, top)) break;
        say("nested groups", top, std::to_string(depth));
        Handle group(H5Gcreate2(file, top.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
        if (!group) break;
        tree.groups.push_back(top);
        std::string deepest = top;
        for (int level = 1; level < depth && group; ++level) {
          group = Handle(H5Gcreate2(group.get(), "g", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
          deepest += "/g";
        }
        tree.groups.push_back(deepest);
        break;
      }
      case 4: {
        auto group_path = join(pick_path(in, tree.groups), pick_name(in, kNames));
        if (!clear(file, tree, tensors, group_path)) break;
        say("group", group_path, "");
        Handle group(H5Gcreate2(file, group_path.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
        if (group) tree.groups.push_back(group_path);
        break;
      }
      case 5: say("dataset", "", ""); add_dataset(file, path, in, tree, tensors, false); break;
      case 6: {
        auto object_path = pick_path(in, all_paths(tree));
        Handle object(H5Oopen(file, object_path.c_str(), H5P_DEFAULT), H5Oclose);
        auto name = pick_name(in, kAttributeNames);
        say("attribute", object_path, name);
        if (object) write_attribute(object.get(), name, in);
        break;
      }
      case 7: {
        auto victim = pick_path(in, all_paths(tree));
        say("delete", victim, "");
        if (victim != "/") clear(file, tree, tensors, victim);
        break;
      }
      case 8: {
        auto from = pick_path(in, all_paths(tree));
        auto to = join(pick_path(in, tree.groups), pick_name(in, kNames));
        if (from == "/" || under(to, from) || under(from, to) || holds_root_link(tree, from) ||
            !clear(file, tree, tensors, to))
          break;
        say("move", from, to);
        if (H5Lmove(file, from.c_str(), file, to.c_str(), H5P_DEFAULT, H5P_DEFAULT) < 0) break;
        auto rename = [&](std::string& p) { if (under(p, from)) p = to + p.substr(from.size()); };
        for (auto& g : tree.groups) rename(g);
        for (auto& d : tree.datasets) rename(d);
        std::map<std::string, ModelTensor> moved;
        for (auto& [p, t] : tensors) {
          auto q = p;
          rename(q);
          if (q.starts_with("/tensors/")) moved[q] = std::move(t);
        }
        tensors = std::move(moved);
        break;
      }
      default: say("tensor", "", ""); add_dataset(file, path, in, tree, tensors, true); break;
    }
    H5Eclear2(H5E_DEFAULT);
  }
}

}  // namespace dlx::fuzz
