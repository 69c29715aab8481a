# SPDX-License-Identifier: Apache-2.0
"""Nested hyperparameters from Python and the C API: DLX_HPARAMS (and DLX_HPARAMS_FILE) nested
the way Determined passes groups, values of any JSON type, dotted lookups as before, and, inside
a trial, the record's flat names taken from the experiment's snapshot.
Run with /usr/bin/python3; DLX_LIBRARY names the built libdlx_c.so, PYTHONPATH python/."""
import ctypes
import json
import os
import tempfile

import h5py

import dlx
from dlx._library import check, library

NESTED = {"optim": {"lr": 0.1, "momentum": 0.9}, "batch": 64,
          "aug": {"flip": True, "crop": [32, 32]}, "tags": [], "note": None}


def fresh_environment(**variables):
    for name in ("DLX_EXPERIMENT_DIR", "DLX_TRIAL_ID", "DLX_HPARAMS", "DLX_HPARAMS_FILE",
                 "DLX_CHECKPOINT_DIR", "DLX_LATEST_CHECKPOINT"):
        os.environ.pop(name, None)
    os.environ.update({"RANK": "0", "WORLD_SIZE": "1", **variables})


def c_text(trial, function, *args):
    value = ctypes.c_char_p()
    check(function(trial._handle, *args, ctypes.byref(value)))
    return value.value.decode("utf-8")


# Outside a trial: DLX_HPARAMS nested, with a mapping, a list and null as values.
fresh_environment(DLX_HPARAMS=json.dumps(NESTED))
trial = dlx.Trial()
assert trial.hparams == NESTED, trial.hparams
assert isinstance(trial.hparams, dict) and json.loads(json.dumps(trial.hparams)) == NESTED
assert trial.hparams["optim"] == {"lr": 0.1, "momentum": 0.9}
assert trial.hparams["optim.lr"] == 0.1 and trial.hparams["optim"]["lr"] == 0.1
assert "optim.momentum" in trial.hparams and "optim.beta" not in trial.hparams
assert trial.hparams.get("optim.beta", 3) == 3
assert trial.hparam("optim.lr") == 0.1
assert trial.hparam("optim") == {"lr": 0.1, "momentum": 0.9}
assert trial.hparam("optim", {}).get("lr") == 0.1            # examples/pytorch reads it so
assert trial.hparam("aug") == {"flip": True, "crop": [32, 32]}
assert trial.hparam("tags", ["x"]) == [] and trial.hparam("note", 1) is None
assert trial.hparams.flat() == {"optim.lr": 0.1, "optim.momentum": 0.9, "batch": 64,
                                "aug.flip": True, "aug.crop": [32, 32], "tags": [], "note": None}
try:
    trial.hparam("optim.beta")
    raise AssertionError("a missing hyperparameter must raise")
except dlx.Error as error:
    assert str(error) == (
        "dlx: hyperparameter 'optim.beta' is not set for this trial (set: optim.lr, "
        "optim.momentum, batch, aug.flip, aug.crop, tags, note); add it to the experiment's "
        "hyperparameters, or give a default: trial.hparam(\"optim.beta\", ...)"), error

# The C API: one value or a whole group as JSON text, the nested and the flat object.
lib = library()
assert json.loads(c_text(trial, lib.dlx_trial_hparam_json, b"optim")) == {"lr": 0.1, "momentum": 0.9}
assert json.loads(c_text(trial, lib.dlx_trial_hparam_json, b"optim.lr")) == 0.1
assert json.loads(c_text(trial, lib.dlx_trial_hparam_json, b"aug.crop")) == [32, 32]
assert json.loads(c_text(trial, lib.dlx_trial_hparams_nested_json)) == NESTED
assert json.loads(c_text(trial, lib.dlx_trial_hparams_json))["optim.momentum"] == 0.9
first = c_text(trial, lib.dlx_trial_hparam_json, b"batch")
for _ in range(100):  # later results must not move the earlier ones (the handle keeps them)
    c_text(trial, lib.dlx_trial_hparam_json, b"note")
lr = ctypes.c_double()
check(lib.dlx_trial_hparam_double(trial._handle, b"optim.lr", ctypes.byref(lr)))
assert lr.value == 0.1 and first == "64"
value = ctypes.c_char_p()
assert lib.dlx_trial_hparam_json(trial._handle, b"optim.beta", ctypes.byref(value)) == 2
assert b"'optim.beta' is not set for this trial" in lib.dlx_last_error()
assert lib.dlx_trial_hparam_double(trial._handle, b"optim", ctypes.byref(lr)) == 2
assert b"""'optim' is {"lr":0.1,"momentum":0.9}: not a number""" in lib.dlx_last_error()
trial.close()

with tempfile.TemporaryDirectory() as directory:
    # DLX_HPARAMS_FILE holds the same nested object.
    path = os.path.join(directory, "hparams.json")
    with open(path, "w") as f:
        json.dump({"optim": {"lr": 0.5}}, f)
    fresh_environment(DLX_HPARAMS_FILE=path)
    trial = dlx.Trial()
    assert trial.hparam("optim.lr") == 0.5 and trial.hparams == {"optim": {"lr": 0.5}}
    trial.close()

    # The flat form of earlier versions still reads, by the same dotted names.
    fresh_environment(DLX_HPARAMS=json.dumps({"optim.lr": 0.25, "batch": 8}))
    trial = dlx.Trial()
    assert trial.hparam("optim.lr") == 0.25 and trial.hparams["optim.lr"] == 0.25
    trial.close()

    # A malformed DLX_HPARAMS: the variable, what is wrong and the form to write.
    fresh_environment(DLX_HPARAMS='{"optim": {"lr": 0.1}')
    try:
        dlx.Trial()
        raise AssertionError("a malformed DLX_HPARAMS must raise")
    except dlx.Error as error:
        assert error.status == 4 and (
            "DLX_HPARAMS is not a JSON object of hyperparameters (write it as {\"name\": value, "
            "\"group\": {\"name\": value}})") in str(error), error

    # Inside a trial: the record keeps the experiment's flat names (from its snapshot).
    experiment = os.path.join(directory, "exp")
    os.makedirs(experiment, mode=0o750)
    with open(os.path.join(experiment, "experiment.yaml"), "w") as f:
        f.write("name: nested\nentrypoint: [python3, train.py]\n"
                "hyperparameters:\n  optim:\n    lr: 0.1\n    momentum: 0.9\n  batch: 64\n"
                "searcher:\n  name: single\n  metric: loss\n")
    fresh_environment(DLX_EXPERIMENT_DIR=experiment, DLX_TRIAL_ID="0",
                      DLX_HPARAMS=json.dumps({"optim": {"lr": 0.1, "momentum": 0.9}, "batch": 64}))
    trial = dlx.Trial()
    assert trial.hparam("optim.momentum") == 0.9
    trial.report_validation(1, loss=0.5)
    trial.finish()
    trial.close()
    with h5py.File(os.path.join(experiment, "trials", "0", "trial.h5"), "r") as f:
        stored = dict(f["hparams"].attrs)
        text = f.attrs["hparams_json"]
    assert stored == {"optim.lr": 0.1, "optim.momentum": 0.9, "batch": 64}, stored
    assert json.loads(text) == {"optim.lr": 0.1, "optim.momentum": 0.9, "batch": 64}, text
print("python nested hparams: ok")
