# SPDX-License-Identifier: Apache-2.0
"""libdlx_c.so through ctypes: where it is found, the C API's signatures, and its errors.

The library is $DLX_LIBRARY when set, else the one installed with this package (the path in
_installed.py, which `cmake --install` writes: from <prefix>/lib/dlx/python/dlx/ or a site
directory such as /usr/lib/python3/dist-packages/dlx/ to <libdir>/libdlx_c.so.0), else the build
tree's (<build>/lib/dlx/python/dlx/ -> <build>/lib/libdlx_c.so), else whatever the system's
library path finds under the library's SONAME.
"""
from __future__ import annotations

import ctypes
import os

NO_COMMUNICATOR = 1

# dlx_status values (dlx/c_api.h) that mean the trial's code or configuration is wrong.
_HPARAM, _CONFIG = 2, 5

CONFIG_ERROR_EXIT_CODE = 78
"""A trainer that ends on a ConfigError exits with this (DLX_CONFIG_ERROR_EXIT_CODE): dlx-launch
fails the trial at once, with the error's line, instead of restarting it."""


class Error(RuntimeError):
    """A failed libdlx call, or input dlx refuses; the message says what and how to fix it."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


class ConfigError(Error):
    """dlx's own error about the trial's code or configuration: a hyperparameter missing or of
    the wrong type, a metric the searcher needs that a validation report lacks, an object
    save_state cannot hold, a validate() that returns nothing at the searcher's target. Running
    the trial again would fail the same way: inside a trial, a ConfigError nothing catches ends
    the process with CONFIG_ERROR_EXIT_CODE (78) after its traceback, and dlx-launch marks the
    trial failed with its message at once, without restarts."""

    def __init__(self, message: str, status: int = _CONFIG):
        super().__init__(status, message)


# Tracebacks name the package, not its private module.
Error.__module__ = ConfigError.__module__ = "dlx"


class NamedTensor(ctypes.Structure):
    """dlx_named_tensor: a tensor to save, by address (the library snapshots it)."""
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_char_p), ("data", ctypes.c_void_p),
                ("shape", ctypes.POINTER(ctypes.c_uint64)), ("rank", ctypes.c_size_t)]


# dlx_place_fn: (context, name, dtype, shape, rank, bytes) -> the address to read the tensor
# into, or None for the library's own memory (Trial.load's `place`).
PLACE_FN = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p,
                            ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t, ctypes.c_size_t)


def _library_path() -> str:
    explicit = os.environ.get("DLX_LIBRARY")
    if explicit:
        return explicit
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        from . import _installed  # absent in the source and build trees
        candidates = [_installed.LIBRARY]
    except ImportError:
        candidates = []
    candidates.append(os.path.join("..", "..", "..", "libdlx_c.so"))
    for candidate in candidates:
        path = os.path.normpath(os.path.join(here, candidate))
        if os.path.exists(path):
            return path
    return "libdlx_c.so.0"


def load_failure(path: str, error: OSError) -> str:
    """What a failed load of libdlx_c means and what to do, after the loader's own words."""
    text = str(error)
    message = f"dlx: cannot load libdlx_c ({path}): {text}. "
    if "GLIBC_" in text:
        return message + ("This system's C library is older than the one libdlx_c was built against. In a "
                          "container image: dlx's portable libdlx_c needs glibc 2.28 or later (Debian 10, "
                          "RHEL 8, Ubuntu 20.04 or newer; docs/containers.md, \"The SDK in any image\"); use "
                          "an image of a newer distribution")
    if text.startswith(path + ":") or text.startswith(os.path.basename(path) + ":"):
        origin = "DLX_LIBRARY names it" if os.environ.get("DLX_LIBRARY") == path else "dlx's install names it"
        return message + f"The file itself is missing or unreadable ({origin}): check the path"
    return message + ("A library it links is missing here. In a container image of another distribution "
                      "than the cluster's, ask your site to install dlx's portable libdlx_c, which needs "
                      "only glibc (docs/containers.md, \"The SDK in any image\"); on a node, install dlx's "
                      "dependencies (its Debian packages pull them in)")


def _load() -> ctypes.CDLL:
    path = _library_path()
    try:
        lib = ctypes.CDLL(path)
    except OSError as error:
        # The same in every run of the trial: a ConfigError, so that it fails at once, not after
        # max_restarts crashes.
        raise ConfigError(load_failure(path, error)) from None
    c_trial, c_checkpoint = ctypes.c_void_p, ctypes.c_void_p
    p = ctypes.POINTER
    signatures = {
        "dlx_trial_create": [ctypes.c_uint, p(c_trial)],
        "dlx_trial_rank": [c_trial, p(ctypes.c_int)],
        "dlx_trial_size": [c_trial, p(ctypes.c_int)],
        "dlx_trial_local_rank": [c_trial, p(ctypes.c_int)],
        "dlx_trial_in_trial": [c_trial, p(ctypes.c_int)],
        "dlx_trial_id": [c_trial, p(ctypes.c_int64)],
        "dlx_trial_experiment_dir": [c_trial, p(ctypes.c_char_p)],
        "dlx_trial_checkpoint_dir": [c_trial, p(ctypes.c_char_p)],
        "dlx_trial_latest_checkpoint": [c_trial, p(ctypes.c_char_p)],
        "dlx_trial_hparams_json": [c_trial, p(ctypes.c_char_p)],
        "dlx_trial_hparams_nested_json": [c_trial, p(ctypes.c_char_p)],
        "dlx_trial_hparam_json": [c_trial, ctypes.c_char_p, p(ctypes.c_char_p)],
        # The values as an address (const double*): Trial passes an array.array's buffer, which
        # costs a fraction of building a ctypes array every report.
        "dlx_trial_report_training": [c_trial, ctypes.c_int64, p(ctypes.c_char_p),
                                      ctypes.c_void_p, ctypes.c_size_t],
        "dlx_trial_report_validation": [c_trial, ctypes.c_int64, p(ctypes.c_char_p),
                                        ctypes.c_void_p, ctypes.c_size_t],
        "dlx_trial_report_validation_next": [c_trial, ctypes.c_int64, p(ctypes.c_char_p),
                                             ctypes.c_void_p, ctypes.c_size_t, p(ctypes.c_int)],
        "dlx_trial_metric_names": [c_trial, p(ctypes.c_char_p), ctypes.c_size_t, p(ctypes.c_uint32)],
        "dlx_trial_hparam_warning": [c_trial, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p],
        "dlx_trial_report_validation_values": [c_trial, ctypes.c_int64, ctypes.c_uint32, ctypes.c_void_p,
                                               p(ctypes.c_int)],
        "dlx_trial_start_length": [c_trial, p(ctypes.c_int64)],
        "dlx_trial_target_length": [c_trial, p(ctypes.c_int64)],
        "dlx_trial_finish": [c_trial],
        "dlx_trial_should_checkpoint_and_exit": [c_trial, p(ctypes.c_int)],
        "dlx_trial_checkpoint_signal": [c_trial, p(ctypes.c_int)],
        "dlx_trial_note_checkpoint_signal": [c_trial, ctypes.c_int],
        "dlx_trial_checkpoint_due": [c_trial, ctypes.c_int64, p(ctypes.c_int)],
        "dlx_trial_checkpoint_and_exit": [c_trial, ctypes.c_int64, ctypes.c_double, p(ctypes.c_int)],
        "dlx_trial_save_checkpoint": [c_trial, ctypes.c_int64, ctypes.c_int64, p(NamedTensor),
                                      ctypes.c_size_t, ctypes.c_char_p, ctypes.c_double],
        "dlx_trial_wait_for_checkpoint": [c_trial, ctypes.c_double, p(ctypes.c_int)],
        "dlx_trial_resume": [c_trial, p(c_checkpoint)],
        "dlx_trial_resume_any_world_size": [c_trial, p(c_checkpoint)],
        "dlx_trial_resume_deferring": [c_trial, ctypes.c_int, p(ctypes.c_char_p), ctypes.c_size_t,
                                       p(c_checkpoint)],
        "dlx_trial_resume_placing": [c_trial, ctypes.c_int, p(ctypes.c_char_p), ctypes.c_size_t,
                                     PLACE_FN, ctypes.c_void_p, p(c_checkpoint)],
        "dlx_trial_resume_placing_on_device": [c_trial, ctypes.c_int, p(ctypes.c_char_p),
                                               ctypes.c_size_t, PLACE_FN, PLACE_FN,
                                               ctypes.c_void_p, p(c_checkpoint)],
        "dlx_checkpoint_open": [c_trial, ctypes.c_char_p, p(c_checkpoint)],
        "dlx_trial_note_resumed": [c_trial, c_checkpoint],
        "dlx_checkpoint_step": [c_checkpoint, p(ctypes.c_int64)],
        "dlx_checkpoint_epoch": [c_checkpoint, p(ctypes.c_int64)],
        "dlx_checkpoint_world_size": [c_checkpoint, p(ctypes.c_int64)],
        "dlx_checkpoint_path": [c_checkpoint, p(ctypes.c_char_p)],
        "dlx_checkpoint_state_json": [c_checkpoint, p(ctypes.c_char_p)],
        "dlx_checkpoint_tensor_count": [c_checkpoint, p(ctypes.c_size_t)],
        "dlx_checkpoint_tensor": [c_checkpoint, ctypes.c_size_t, p(ctypes.c_char_p),
                                  p(ctypes.c_char_p), p(p(ctypes.c_uint64)), p(ctypes.c_size_t),
                                  p(ctypes.c_void_p), p(ctypes.c_size_t)],
        "dlx_checkpoint_tensor_deferred": [c_checkpoint, ctypes.c_size_t, p(ctypes.c_int)],
        "dlx_checkpoint_tensor_on_device": [c_checkpoint, ctypes.c_size_t, p(ctypes.c_int)],
        "dlx_checkpoint_read_tensor": [c_checkpoint, ctypes.c_size_t, ctypes.c_void_p,
                                       ctypes.c_size_t],
        "dlx_checkpoint_read_tensors": [c_checkpoint, ctypes.c_size_t, p(ctypes.c_size_t),
                                        p(ctypes.c_void_p), p(ctypes.c_size_t)],
    }
    for name, argtypes in signatures.items():
        function = getattr(lib, name)
        function.argtypes = argtypes
        function.restype = ctypes.c_int
    # Newer than some libraries a container may still mount: bound where present (the caller
    # says what is missing when it needs one).
    optional = {
        "dlx_trial_save_checkpoint_device": [c_trial, ctypes.c_int64, ctypes.c_int64,
                                             p(NamedTensor), p(ctypes.c_ubyte), ctypes.c_size_t,
                                             ctypes.c_void_p, ctypes.c_char_p, ctypes.c_double],
        "dlx_trial_save_checkpoint_flagged": [c_trial, ctypes.c_int64, ctypes.c_int64,
                                              p(NamedTensor), p(ctypes.c_ubyte), ctypes.c_size_t,
                                              ctypes.c_void_p, ctypes.c_char_p, ctypes.c_double],
        "dlx_trial_wait_for_snapshot": [c_trial],
        "dlx_trial_withdraw_checkpoint": [c_trial, ctypes.c_int64, p(ctypes.c_int)],
    }
    for name, argtypes in optional.items():
        function = getattr(lib, name, None)
        if function is not None:
            function.argtypes = argtypes
            function.restype = ctypes.c_int
    lib.dlx_trial_destroy.argtypes = [c_trial]
    lib.dlx_trial_destroy.restype = None
    lib.dlx_checkpoint_destroy.argtypes = [c_checkpoint]
    lib.dlx_checkpoint_destroy.restype = None
    lib.dlx_last_error.argtypes = []
    lib.dlx_last_error.restype = ctypes.c_char_p
    return lib


_lib: ctypes.CDLL | None = None
_report_training: ctypes._CFuncPtr | None = None


def library() -> ctypes.CDLL:
    """The loaded library (loaded on first use)."""
    global _lib
    if _lib is None:
        _lib = _load()
    return _lib


def report_training_values() -> ctypes._CFuncPtr:
    """dlx_trial_report_training_values, the training loop's call, loaded as a PyDLL function: the
    GIL stays held through it (it takes a mutex and copies the values: no Python, no wait worth
    releasing it for), which saves releasing and taking it again every report, and keeps the
    caller's values buffer (trial.py) from being refilled by another thread meanwhile."""
    global _report_training
    if _report_training is None:
        function = ctypes.PyDLL(library()._name).dlx_trial_report_training_values
        function.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_uint32, ctypes.c_void_p]
        function.restype = ctypes.c_int
        _report_training = function
    return _report_training


def error_for(status: int, message: str) -> Error:
    """The exception for a failed call: ConfigError for the statuses that mean the trial's code or
    configuration is wrong, else Error."""
    if status in (_HPARAM, _CONFIG):
        return ConfigError(message, status)
    return Error(status, message)


def check(status: int) -> None:
    """Raises Error (or ConfigError) with dlx_last_error()'s text when a call failed."""
    if status != 0:
        raise error_for(status, library().dlx_last_error().decode("utf-8", "replace"))
