# SPDX-License-Identifier: Apache-2.0
"""Determined's APIs that dlx does not run: importing one ends the trial at once (exit 78, no
restart) with what to use instead. An experiment whose entrypoint names such a Trial class is
refused at sbatch already (spank-plugin/trial_class_step.cpp); these catch the rest."""
from __future__ import annotations

from typing import NoReturn

import dlx
from dlx.trial import _exit_on_config_error


class UnsupportedAPI(dlx.ConfigError, ImportError):
    """A ConfigError (exit 78) that is also an ImportError, for code that probes with try/import."""


def refuse(api: str, instead: str) -> NoReturn:
    _exit_on_config_error(None)  # uncaught, it ends the trial with exit 78, whether a Trial exists or not
    raise UnsupportedAPI(f"determined on dlx: {api} is not supported: {instead} (docs/determined.md lists "
                         "what runs)")
