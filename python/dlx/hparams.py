"""dlx.Hparams: a trial's hyperparameters as Determined passes them, nested by group
({"optim": {"lr": 0.1}, "batch": 64}), with the dotted names of earlier dlx still accepted.

It is a dict (json.dumps, ** and iteration see the nested groups); looking a name up also takes
the dotted path: ``hparams["optim.lr"]``, ``"optim.lr" in hparams``, ``hparams.get("optim.lr")``.
A literal key wins over a path, so a Determined name that contains a '.' and the flat form of
earlier dlx versions ({"optim.lr": 0.1}) read the same way (dlx/config/hparam_tree.hpp is the C++
twin of this lookup).
"""
from __future__ import annotations

from typing import Any, Iterator

_MISSING = object()


def _find(tree: dict, name: str) -> Any:
    if dict.__contains__(tree, name):
        return dict.__getitem__(tree, name)
    dot = name.find(".")
    while dot != -1:
        group = dict.get(tree, name[:dot], _MISSING)
        if isinstance(group, dict):
            found = _find(group, name[dot + 1:])
            if found is not _MISSING:
                return found
        dot = name.find(".", dot + 1)
    return _MISSING


def _dotted_names(tree: dict, prefix: str = "") -> Iterator[str]:
    for key, value in dict.items(tree):
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            yield from _dotted_names(value, name + ".")
        else:
            yield name


class Hparams(dict):
    """Nested hyperparameters with dotted lookups; groups are Hparams too."""

    def __init__(self, values: dict | None = None):
        super().__init__()
        for key, value in (values or {}).items():
            super().__setitem__(key, Hparams(value) if isinstance(value, dict) else value)

    def __getitem__(self, name: str) -> Any:
        found = _find(self, name)
        if found is _MISSING:
            raise KeyError(name)
        return found

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and _find(self, name) is not _MISSING

    def get(self, name: str, default: Any = None) -> Any:
        found = _find(self, name)
        return default if found is _MISSING else found

    def flat(self) -> dict:
        """{"optim.lr": 0.1, ...}: every value under its dotted name (a mapping taken as a group)."""
        return {name: _find(self, name) for name in _dotted_names(self)}

    def names(self) -> list[str]:
        """The dotted names of the values, in order (for messages)."""
        return list(_dotted_names(self))
