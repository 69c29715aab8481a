#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the seed programs of the checkpoint and trial_record fuzz targets into
corpus/checkpoint/ and corpus/trial_record/ (run from anywhere; rerun after changing the input
format of checkpoint_fuzz.cpp, trial_record_fuzz.cpp or h5_fuzz_mutate.cpp).

Each seed is a program in that format (bytes read front to back, each choice one byte modulo
the length of the list it picks from): a real file written by dlx, then one edit that makes it
hostile the way issue 17 found (a link cycle, a link to a FIFO, deep nesting, a dataset that
declares gigabytes it does not store...), so that the fuzzer starts from every kind."""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
NAMES = ["w", "b", "model", "fc1", "loop", "deep", "steps", "loss", "accuracy", "val_loss",
         "state", "tensors", "metrics", "training", "validation", "hparams", "restart_events",
         "1", "2", "x", "zz"]
TENSOR_NAMES = ["w", "model/w", "model/fc1/b", "a/b/c/d", "rng/rank-0/x", "optimizer/m"]
# Extents of h5_fuzz_mutate.cpp: 0 1 2 3 5 16 1000 2^20 2^29 2^31 2^40.
EXTENT_2_29, EXTENT_2_31, EXTENT_5 = 8, 9, 4
# Dataset layouts: 0 contiguous written, 1 contiguous never allocated, 2 chunked, 3 chunked
# written, 4 compact, 5 external storage, 6 virtual.
CONTIGUOUS, MISSING, CHUNKED, EXTERNAL, VIRTUAL = 0, 1, 2, 5, 6
# dtypes in kAllDTypes order.
FLOAT32, FLOAT64, INT64 = 0, 1, 7


def u16(value):
    return struct.pack("<H", value)


class Tree:
    def __init__(self, groups, datasets):
        self.groups, self.datasets = list(groups), list(datasets)

    def all(self):
        return self.groups + self.datasets

    def group(self, path):
        return bytes([self.groups.index(path)])

    def path(self, path):
        return bytes([self.all().index(path)])


def name(text):
    return bytes([NAMES.index(text)])


def hard_link(tree, target, parent, link):
    return bytes([0]) + tree.path(target) + tree.group(parent) + name(link)


def soft_link(tree, parent, link, text_choice):
    # texts: [picked path, ".", "..", "/", "a/b", "/nowhere", the link itself]
    return bytes([1]) + tree.group(parent) + name(link) + bytes([0, text_choice])


def soft_link_to(tree, parent, link, target):
    return bytes([1]) + tree.group(parent) + name(link) + tree.path(target) + bytes([0])


def external_link(tree, parent, link, target_file):
    # target files: 0 the FIFO, 1 a missing file, 2 another HDF5 file, 3 the file itself
    return bytes([2]) + tree.group(parent) + name(link) + bytes([target_file, 0])


def nested(tree, parent, top, depth):
    return bytes([3]) + tree.group(parent) + name(top) + u16(depth - 1)


def dataset(tree, parent, link, type_choice, dims, layout, extra=b""):
    # type_choice: 0 float64, 1 int64, 2 float32, 3 uint8, 4 variable string, 5 fixed string
    return (bytes([5]) + tree.group(parent) + name(link) + bytes([0, type_choice, len(dims)])
            + bytes(dims) + bytes([layout]) + extra)


def tensor(tree, parent, link, dtype, dims, layout, extra=b"", flaws=0):
    parents = [g for g in tree.groups if g == "/tensors" or g.startswith("/tensors/")]
    return (bytes([9, parents.index(parent)]) + name(link) + bytes([dtype, 1, len(dims)])
            + bytes(dims) + bytes([layout]) + extra + bytes([flaws]))


def attribute(tree, path, attribute_index, kind, value):
    return bytes([6]) + tree.path(path) + bytes([attribute_index, kind]) + value


def program(edits):
    return bytes([len(edits)]) + b"".join(edits)


def checkpoint_content():
    # model/w float32 [5], optimizer/m float64 [2, 3]; state: data_cursor int64, note string.
    tensors = bytes([2]) + bytes([1, FLOAT32, 1, 5, 7]) + bytes([5, FLOAT64, 2, 2, 3, 9])
    state = bytes([2, 0]) + struct.pack("<Q", 4800) + bytes([2, 12]) + b"warm restart"
    tree = Tree(["/", "/hparams", "/state", "/tensors", "/tensors/model", "/tensors/optimizer"],
                ["/tensors/model/w", "/tensors/optimizer/m"])
    return tensors + state, tree


def trial_content():
    # 3 training rows of loss and accuracy, 2 validation rows of loss; no restart events. The
    # tree as trial_record_fuzz.cpp's tree_of lists it (columns in name order).
    head = bytes([3, 1, 4]) + b"none" + bytes([1, 0]) + u16(3)
    training = bytes([3, 2]) + b"".join(bytes([1]) + u16(100 + r) + bytes([1]) + u16(50 + r) + bytes([r]) for r in range(3))
    validation = bytes([2, 1]) + b"".join(bytes([1]) + u16(200 + r) + bytes([r]) for r in range(2))
    tail = bytes([0, 1])  # no restart events, no start checkpoint
    tree = Tree(["/", "/hparams", "/metrics", "/metrics/training", "/metrics/validation"],
                ["/metrics/training/steps", "/metrics/training/accuracy", "/metrics/training/loss",
                 "/metrics/validation/steps", "/metrics/validation/loss"])
    return head + training + validation + tail, tree


def write(directory, seeds):
    os.makedirs(directory, exist_ok=True)
    for seed_name, data in seeds.items():
        with open(os.path.join(directory, seed_name), "wb") as out:
            out.write(data)


def checkpoint_seeds():
    content, t = checkpoint_content()
    digest, flip, cut = 1, 2, 4
    return {
        "intact": content + program([]) + bytes([0]),
        "hard-link-cycle": content + program([hard_link(t, "/tensors/model", "/tensors/model", "loop")]) + bytes([digest]),
        "hard-link-root": content + program([hard_link(t, "/", "/tensors/model", "loop")]) + bytes([0]),
        "soft-link-cycle": content + program([soft_link_to(t, "/tensors/model", "loop", "/tensors")]) + bytes([0]),
        "soft-link-dot": content + program([soft_link(t, "/tensors", "x", 1)]) + bytes([0]),
        "external-link-fifo": content + program([external_link(t, "/tensors/model", "x", 0)]) + bytes([0]),
        "external-link-self": content + program([external_link(t, "/", "state", 3)]) + bytes([0]),
        "nested-300": content + program([nested(t, "/tensors", "deep", 300)]) + bytes([0]),
        "chunked-8GiB": content + program([tensor(t, "/tensors/model", "w", FLOAT32, [EXTENT_2_31], CHUNKED)]) + bytes([digest]),
        "missing-8GiB": content + program([tensor(t, "/tensors/model", "w", FLOAT32, [EXTENT_2_31], MISSING)]) + bytes([digest]),
        "virtual-fifo": content + program([tensor(t, "/tensors/model", "w", FLOAT32, [EXTENT_5], VIRTUAL, bytes([0]))]) + bytes([digest]),
        "external-storage": content + program([tensor(t, "/tensors/model", "w", FLOAT32, [EXTENT_5], EXTERNAL, bytes([0]))]) + bytes([digest]),
        "new-tensor": content + program([tensor(t, "/tensors/model", "x", FLOAT64, [EXTENT_5], CONTIGUOUS, bytes([3]))]) + bytes([digest]),
        "flipped-byte": content + program([]) + bytes([flip, 0]) + u16(3) + bytes([2]),
        "cut-tail": content + program([]) + bytes([cut]) + u16(100),
        "big-state-string": content + program([attribute(t, "/state", 34, 3, bytes([0]) + b"x" * 8)]) + bytes([0]),
    }


def trial_seeds():
    content, t = trial_content()
    return {
        "intact": content + program([]),
        "chunked-536870912-rows": content + program([dataset(t, "/metrics/training", "steps", 1, [EXTENT_2_29], CHUNKED)]),
        "missing-536870912-rows": content + program([dataset(t, "/metrics/training", "loss", 0, [EXTENT_2_29], MISSING)]),
        "external-storage-fifo": content + program([dataset(t, "/metrics/training", "loss", 0, [2], EXTERNAL, bytes([0]))]),
        "soft-link-cycle": content + program([soft_link_to(t, "/metrics", "validation", "/metrics")]),
        "hard-link-twice": content + program([hard_link(t, "/metrics/training/loss", "/metrics/training", "zz")]),
        "external-link-fifo": content + program([external_link(t, "/", "hparams", 0)]),
        "nested-300": content + program([nested(t, "/metrics/training", "deep", 300)]),
    }


if __name__ == "__main__":
    write(os.path.join(HERE, "corpus", "checkpoint"), checkpoint_seeds())
    write(os.path.join(HERE, "corpus", "trial_record"), trial_seeds())
