# SPDX-License-Identifier: Apache-2.0
"""Determined's APIs that dlx does not run: importing one ends the trial at once (exit 78, no
restart) with what to use instead. An experiment whose entrypoint names such a Trial class is
refused at sbatch already (spank-plugin/trial_class_step.cpp); these catch the rest."""
from __future__ import annotations

import difflib
from typing import Any, NoReturn

import dlx
from dlx.trial import _exit_on_config_error


class UnsupportedAPI(dlx.ConfigError, ImportError):
    """A ConfigError (exit 78) that is also an ImportError, for code that probes with try/import."""


def refuse(api: str, instead: str) -> NoReturn:
    _exit_on_config_error(None)  # uncaught, it ends the trial with exit 78, whether a Trial exists or not
    raise UnsupportedAPI(f"determined on dlx: {api} is not supported: {instead} (docs/determined.md lists "
                         "what runs)")


class UnsupportedAttribute(dlx.ConfigError, AttributeError):
    """A ConfigError (exit 78) that is also an AttributeError, so that getattr(obj, name, default)
    and hasattr() probes still work."""


def refuse_attribute(owner: Any, name: str) -> NoReturn:
    """A Determined attribute dlx does not have: uncaught, the trial ends at once (exit 78), where
    a plain AttributeError would be a crash restarted until the crash-loop rule gives up."""
    _exit_on_config_error(None)
    public = [candidate for candidate in dir(owner) if not candidate.startswith("_")]
    close = difflib.get_close_matches(name, public, n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    raise UnsupportedAttribute(f"determined on dlx: {type(owner).__name__} has no {name!r} "
                               f"({hint}docs/determined.md lists what runs)")


class RefusesUnknownAttributes:
    """A base of Determined's objects on dlx (the contexts, the Trainer, the cluster info): a
    public attribute neither the class nor the instance has ends the trial at once
    (refuse_attribute)."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        refuse_attribute(self, name)
