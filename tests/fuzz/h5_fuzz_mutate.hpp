// SPDX-License-Identifier: Apache-2.0
#pragma once
// Structure-aware mutation of a valid HDF5 file for the checkpoint and trial-record fuzz targets.
//
// Why structure-aware: libhdf5 1.10.8 itself crashes on some malformed bytes (its own bugs, which
// dlx cannot fix), so a fuzzer that flips raw bytes mostly finds those (h5_raw_fuzz.cpp, run by
// hand). What dlx's readers must survive is a *valid* file with hostile structure: links of every
// kind and cycles, deep nesting, datasets whose extent, layout and storage disagree, attributes
// of any type and size. The targets write a real file with dlx's own writer, then apply a program
// of edits through the HDF5 API (so the file stays valid HDF5), then run the readers on it.
//
// A program is a count (one byte) and that many edits, each an opcode byte and its operands:
//   0 hard link     parent, name, target            5 dataset         parent, name, DatasetSpec
//   1 soft link     parent, name, target or text    6 attribute       object, name, value
//   2 external link parent, name, file, object      7 delete          path
//   3 nested groups parent, name, depth (u16)       8 move            path, parent, name
//   4 group         parent, name                    9 tensor dataset  like 5, with tensor attributes
// Choices (parent, target, name...) are one byte modulo the size of the list chosen from.
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <hdf5.h>

#include "h5_fuzz_input.hpp"

namespace dlx::fuzz {

// A directory of this process's own (on tmpfs when there is one) with what links point at: a
// FIFO (opening it would block forever), an ordinary HDF5 file, and a name that does not exist.
struct Scratch {
  std::filesystem::path dir, fifo, other_file, missing;
  static const Scratch& get();
};

// Paths known to exist in the file being edited (the edits add to them).
struct Tree {
  std::vector<std::string> groups{"/"};
  std::vector<std::string> datasets;
  // Hard links to the root group: never deleted again. Unlinking them lowers the root group's
  // reference count, and libhdf5 1.10.8 then frees the root group itself and crashes on the
  // next edit (an HDF5 bug met by the editor, not by the readers).
  std::vector<std::string> root_links;
};

// What an edit made a tensor look like, for the checkpoint target's metadata digest: the dtype
// name, shape and block CRCs it wrote (the reader's TensorInfo, less the bytes).
struct ModelTensor {
  std::string dtype;
  std::vector<std::uint64_t> shape;
  std::vector<std::uint32_t> crc32c;
};

// Applies the program in `in` to `file`. `tensors` (paths "/tensors/..." -> what they hold) is
// kept up to date: tensor datasets added, paths deleted or moved.
void mutate(hid_t file, const std::filesystem::path& path, ByteReader& in, Tree& tree,
            std::map<std::string, ModelTensor>& tensors);

// Switches off HDF5's printing of errors: the edits and the readers fail often, on purpose.
void quiet_hdf5();

}  // namespace dlx::fuzz
