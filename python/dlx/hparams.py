# SPDX-License-Identifier: Apache-2.0
"""dlx.Hparams: a trial's hyperparameters as Determined passes them, nested by group
({"optim": {"lr": 0.1}, "batch": 64}), with the dotted names of earlier dlx still accepted.

It is a dict (json.dumps, ** and iteration see the nested groups); looking a name up also takes
the dotted path: ``hparams["optim.lr"]``, ``"optim.lr" in hparams``, ``hparams.get("optim.lr")``.
A literal key wins over a path, so a Determined name that contains a '.' and the flat form of
earlier dlx versions ({"optim.lr": 0.1}) read the same way (dlx/config/hparam_tree.hpp is the C++
twin of this lookup).

Names are checked as the trainer reads them (NameCheck): a name asked for with a default that the
experiment does not define, and a name the experiment defines that the trainer never read, are
warnings on stderr (the trial's log) with the closest name of the other kind, so that a typo
(`batch_sise` in the experiment, ``trial.hparam("batch_size", 64)`` in the script) is named on
the first trial instead of training every trial with the default.
"""
from __future__ import annotations

import difflib
from typing import Any, Callable, Iterator

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


def closest_name(name: str, candidates: list[str]) -> str | None:
    """The candidate `name` is most likely a typo of (difflib's ratio >= 0.75, which takes
    batch_sise for batch_size and lr for lr_ but not lr for momentum), or None."""
    found = difflib.get_close_matches(name, candidates, n=1, cutoff=0.75)
    return found[0] if found else None


class NameCheck:
    """Which of the experiment's names a trial read, and the warnings about the others.

    `defined` are the experiment's dotted names; `warn` prints one warning (None: collect them
    only, on ranks other than 0); `record(kind, name, text)`, when given, keeps each warning
    where `dlx status` shows it (dlx.Trial: trial.h5, through dlx_trial_hparam_warning; kind
    "default" or "unread"). Every warning is said once and kept in `warnings`."""

    def __init__(self, defined: list[str], warn: Callable[[str], None] | None,
                 record: Callable[[str, str, str], None] | None = None):
        self.defined = defined
        self.read: set[str] = set()
        self.defaulted: dict[str, Any] = {}  # names asked for with a default, not defined
        self.warnings: list[str] = []
        self._warn = warn
        self._record = record
        self._said: set[str] = set()

    def note_read(self, name: str) -> None:
        """`name` (a value or a group) was read: it and every name under it count as read."""
        self.read.update(n for n in self.defined if n == name or n.startswith(name + "."))

    def note_default(self, name: str, default: Any, how: str) -> None:
        """`name` is not defined and the trainer took `default` (asked through `how`)."""
        self.defaulted.setdefault(name, default)
        guess = closest_name(name, [n for n in self.defined if n not in self.read]) or \
            closest_name(name, self.defined)
        hint = f"did you mean '{guess}'? " if guess else ""
        known = ", ".join(self.defined) if self.defined else "none"
        self._say(f"default:{name}",
                  f"hyperparameter '{name}' is not defined by the experiment, so {how} uses its "
                  f"default {default!r} ({hint}the experiment defines: {known})")

    def unread(self) -> list[str]:
        return [name for name in self.defined if name not in self.read]

    def check_unread(self) -> None:
        """Warns once about each defined name not read so far (call it when the trainer has
        read its hyperparameters: dlx.torch.Loop does when training starts, Trial.finish()
        at the end).

        A trainer that has read no name through dlx (neither a value nor a default) reads its
        hyperparameters some other way, DLX_HP_<NAME> or DLX_HPARAMS, which dlx cannot see:
        then nothing is said, rather than a warning about every name it does read."""
        if not self.read and not self.defaulted:
            return
        for name in self.unread():
            guess = closest_name(name, list(self.defaulted))
            hint = f": did you mean '{guess}', which it asked for and got the default " \
                   f"{self.defaulted[guess]!r}?" if guess else \
                " (remove it from the experiment, or read it: trial.hparam(\"" + name + "\"))"
            self._say(f"unread:{name}",
                      f"the experiment defines hyperparameter '{name}', which this trial has "
                      f"not read{hint}")

    def _say(self, key: str, message: str) -> None:
        if key in self._said:
            return
        self._said.add(key)
        text = f"dlx: warning: {message}"
        self.warnings.append(text)
        if self._warn is not None:
            self._warn(text)
        if self._record is not None:
            kind, name = key.split(":", 1)
            self._record(kind, name, text)


class Hparams(dict):
    """Nested hyperparameters with dotted lookups; groups are Hparams too.

    With a NameCheck (dlx.Trial gives it one), every lookup records the name it read, and
    get(name, default) of a name that is not defined warns (see the module's docstring)."""

    def __init__(self, values: dict | None = None, *, check: NameCheck | None = None,
                 prefix: str = ""):
        super().__init__()
        self._check = check
        self._prefix = prefix
        for key, value in (values or {}).items():
            if isinstance(value, dict):
                value = Hparams(value, check=check, prefix=f"{prefix}{key}.")
            super().__setitem__(key, value)

    def _found(self, name: str) -> Any:
        found = _find(self, name)
        if found is not _MISSING and self._check is not None:
            self._check.note_read(self._prefix + name)
        return found

    def __getitem__(self, name: str) -> Any:
        found = self._found(name)
        if found is _MISSING:
            raise KeyError(name)
        return found

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._found(name) is not _MISSING

    def get(self, name: str, default: Any = _MISSING) -> Any:
        found = self._found(name)
        if found is not _MISSING:
            return found
        if default is _MISSING:
            return None
        if self._check is not None:
            self._check.note_default(self._prefix + name, default,
                                     f"hparams.get(\"{self._prefix + name}\", ...)")
        return default

    def flat(self) -> dict:
        """{"optim.lr": 0.1, ...}: every value under its dotted name (a mapping taken as a group)."""
        return {name: _find(self, name) for name in _dotted_names(self)}

    def names(self) -> list[str]:
        """The dotted names of the values, in order (for messages)."""
        return list(_dotted_names(self))
