# SPDX-License-Identifier: Apache-2.0
"""State dicts <-> (skeleton, tensors): the structure of each object's state as JSON, its tensors
by path.

A path is the object's name and the keys down to the tensor, joined with '/': a module's
`layer1.0.weight` is `model/layer1.0.weight`, Adam's first moment of parameter 3 is
`optimizer/state/3/exp_avg`. The checkpoint stores each tensor as the HDF5 dataset
/tensors/<path>, so h5py finds a weight by its state-dict name. The skeleton keeps everything a
path loses (int or str keys, tuple or list, OrderedDict and a module's `_metadata`) and every
non-tensor leaf with its exact type (floats as float.hex(), so NaN, infinities and every bit
survive), so what comes back equals, type for type, what went in.

Skeleton nodes (JSON):
  {"tensor": PATH, "dtype": "float32"}               dtype: the torch dtype's name
  {"dict": [[KEY, NODE], ...], "ordered": true, "metadata": NODE}   KEY: ["s", str] | ["i", int]
  {"list": [NODE, ...]}     {"tuple": [NODE, ...]}
  {"int": N} {"float": HEX} {"bool": B} {"str": S} {"none": null}
"""
from __future__ import annotations

import collections
from typing import Any, Callable

import torch

from .._library import ConfigError

Leaf = Any


class TreeError(ConfigError):
    """A state that dlx.torch cannot save or restore; the message names the object and key. A
    ConfigError: the same objects fail the same way on every run."""


def where(name: str, keys: list) -> str:
    """objects['model']['layer1.0.weight'] as text, for messages."""
    return f"objects[{name!r}]" + "".join(f"[{key!r}]" for key in keys)


def _path_parts(key: Any, name: str, keys: list) -> list[str]:
    """The HDF5 link names key `key` (below objects[name][keys...]) makes."""
    text = str(key)
    parts = text.split("/")
    if "\0" in text or any(part in ("", ".") for part in parts):
        raise TreeError(
            f"dlx.torch: {where(name, keys + [key])}: the key {key!r} cannot name an HDF5 "
            f"dataset (empty, '.', a NUL byte, or '/' at its start or end or twice in a row); "
            f"rename the key")
    return parts


class Encoder:
    """Walks the objects' states; `on_tensor(path, tensor, where)` is called for each tensor."""

    def __init__(self, on_tensor: Callable[[str, torch.Tensor, str], None]):
        self._on_tensor = on_tensor
        self._paths: dict[str, str] = {}     # tensor path -> where it came from
        self._groups: dict[str, str] = {}    # every proper prefix of a tensor path -> where

    def encode(self, name: str, value: Any, keys: list, parts: list[str] | None) -> dict:
        """The node of `value`, found at objects[name][keys...]; its tensors are stored at
        the path the keys `parts` make (None: a place that holds no tensors: `_metadata`)."""
        if isinstance(value, torch.Tensor):
            return self._tensor(name, value, keys, parts)
        if isinstance(value, dict):
            entries = []
            for key, child in value.items():
                if isinstance(key, bool) or not isinstance(key, (str, int)):
                    raise TreeError(
                        f"dlx.torch: {where(name, keys)} has the key {key!r} of type "
                        f"{type(key).__name__}; dlx.torch saves dicts keyed by str or int")
                tag = ["s", key] if isinstance(key, str) else ["i", key]
                below = None if parts is None else parts + [key]
                entries.append([tag, self.encode(name, child, keys + [key], below)])
            node = {"dict": entries}
            if isinstance(value, collections.OrderedDict):
                node["ordered"] = True
            metadata = getattr(value, "_metadata", None)
            if isinstance(metadata, dict):  # a module's state_dict: versions for load_state_dict
                node["metadata"] = self.encode(name, dict(metadata), keys + ["_metadata"], None)
            return node
        if isinstance(value, (list, tuple)):
            children = [self.encode(name, child, keys + [index],
                                    None if parts is None else parts + [index])
                        for index, child in enumerate(value)]
            return {"tuple" if isinstance(value, tuple) else "list": children}
        return self._leaf(name, value, keys)

    def _leaf(self, name: str, value: Any, keys: list) -> dict:
        if value is None:
            return {"none": None}
        if isinstance(value, bool):
            return {"bool": value}
        if type(value) is int:
            return {"int": value}
        if type(value) is float:
            return {"float": value.hex()}
        if type(value) is str:
            return {"str": value}
        raise TreeError(
            f"dlx.torch: {where(name, keys)} is a {type(value).__module__}.{type(value).__name__} "
            f"({_short(value)}); dlx.torch saves tensors, int, float, bool, str, None and dicts, "
            f"lists and tuples of them (no pickle): convert it, or keep it out of the state")

    def _tensor(self, name: str, tensor: torch.Tensor, keys: list, raw: list | None) -> dict:
        here = where(name, keys)
        if raw is None:
            raise TreeError(f"dlx.torch: {here} is a tensor where dlx.torch expects none")
        parts = [name]
        for depth, key in enumerate(raw[1:]):
            parts += _path_parts(key, name, keys[:depth])
        path = "/".join(parts)
        if path in self._paths or path in self._groups:
            other = self._paths.get(path) or self._groups[path]
            raise TreeError(
                f"dlx.torch: {here} and {other} would both be stored at /tensors/{path}; "
                f"rename one of the keys (a key with '/' makes groups)")
        for end in range(1, len(parts)):
            prefix = "/".join(parts[:end])
            if prefix in self._paths:
                raise TreeError(
                    f"dlx.torch: {here} would be stored below /tensors/{prefix}, which holds "
                    f"{self._paths[prefix]}; rename one of the keys (a key with '/' makes groups)")
            self._groups.setdefault(prefix, here)
        self._paths[path] = here
        self._on_tensor(path, tensor, here)
        return {"tensor": path, "dtype": str(tensor.dtype).removeprefix("torch.")}


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def decode(node: dict, tensor_of: Callable[[str, str], torch.Tensor]) -> Any:
    """The value a skeleton node describes; `tensor_of(path, dtype)` gives each tensor."""
    if "tensor" in node:
        return tensor_of(node["tensor"], node["dtype"])
    if "dict" in node:
        value = collections.OrderedDict() if node.get("ordered") else {}
        for (kind, key), child in node["dict"]:
            value[key if kind == "s" else int(key)] = decode(child, tensor_of)
        if "metadata" in node:
            value._metadata = decode(node["metadata"], tensor_of)
        return value
    if "list" in node:
        return [decode(child, tensor_of) for child in node["list"]]
    if "tuple" in node:
        return tuple(decode(child, tensor_of) for child in node["tuple"])
    if "float" in node:
        return float.fromhex(node["float"])
    for kind in ("int", "bool", "str"):
        if kind in node:
            return node[kind]
    if "none" in node:
        return None
    raise TreeError(f"dlx.torch: the checkpoint's structure has an unknown node {_short(node)}; "
                    f"was it written by a newer dlx?")
