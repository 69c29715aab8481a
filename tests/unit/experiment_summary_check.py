# SPDX-License-Identifier: Apache-2.0
"""Checks an experiment's experiment.h5 against the journal, as h5py and h5dump read it:
usage: experiment_summary_check.py EXPERIMENT_DIR DLX_CLI [--expect-written-by-trials]

- the file opens with h5py and h5dump, format_version 1, and reflects the whole journal
  (journal_bytes == the journal's size);
- /decisions equals `dlx replay --json`'s decisions row by row (offset, event, ticket, trial,
  length, metric, action, target, reason), and every ranked row's rank and peers are the ones its
  reason states ("ranks R of P");
- /trials equals `dlx replay --state`'s trials (status, ticket, lengths, metrics, hyperparameters),
  and best_trial equals replay's;
- /config/experiment_yaml is the frozen experiment.yaml; /config/search_space names every
  hyperparameter; /trial_files/<id> links reach trials/<id>/trial.h5 when it exists, also when
  the reader's working directory is elsewhere.
With --expect-written-by-trials the last writer must be a trial (dlx-launch or libdlx), not a tool.
Prints one line per check; exits non-zero (AssertionError) on the first mismatch."""
import json
import math
import os
import re
import subprocess
import sys

import h5py

directory, cli = sys.argv[1], sys.argv[2]
by_trials = "--expect-written-by-trials" in sys.argv[3:]
path = os.path.join(directory, "experiment.h5")


def text(value):
    return value.decode() if isinstance(value, bytes) else value


def same_metric(a, b):
    if b is None:
        return math.isnan(a)
    return a == b


def replay(*flags):
    result = subprocess.run([cli, "replay", directory, *flags], capture_output=True, text=True)
    assert result.returncode == 0, (flags, result.returncode, result.stderr)
    return json.loads(result.stdout)


decisions = replay("--json")
state = replay("--state")
os.chdir("/")  # external links must resolve relative to experiment.h5, not the working directory
with h5py.File(path, "r") as f:
    attrs = f.attrs
    assert attrs["format_version"] == 1, attrs["format_version"]
    written_by = text(attrs["written_by"])
    assert not by_trials or written_by.startswith(("dlx-launch", "libdlx")), written_by
    journal_size = os.path.getsize(os.path.join(directory, "journal"))
    assert attrs["journal_bytes"] == journal_size, (attrs["journal_bytes"], journal_size)
    print(f"experiment.h5: written by {written_by}, reflects all {journal_size} journal bytes")

    rows = f["decisions"][:]
    expected = decisions["decisions"]
    assert len(rows) == len(expected) == attrs["decisions"], (len(rows), len(expected))
    ranked = 0
    for row, want in zip(rows, expected):
        got = {"offset": int(row["journal_offset"]), "type": text(row["event"]), "trial": int(row["trial"]),
               "length": int(row["length"]), "action": text(row["action"]),
               "target_length": int(row["target_length"]), "reason": text(row["reason"]),
               "ticket": None if row["ticket"] < 0 else int(row["ticket"]), "unix": int(row["unix_time"])}
        for key, value in got.items():
            assert value == want[key], (key, value, want)
        assert same_metric(float(row["metric"]), want["metric"]), (row["metric"], want)
        if row["rank"] >= 1:
            ranked += 1
            stated = re.search(r"rung (\d+) \(length \d+[^)]*\): \S+ \S+ ranks (\d+) of (\d+)", got["reason"])
            assert stated, got["reason"]
            assert (int(row["rung"]), int(row["rank"]), int(row["peers"])) == tuple(map(int, stated.groups())), \
                (row["rung"], row["rank"], row["peers"], got["reason"])
    assert ranked > 0, "no decision carries a ranking"
    print(f"decisions: {len(rows)} rows equal dlx replay --json; {ranked} ranked, each as its reason says")

    trials = f["trials"][:]
    want_trials = {t["trial"]: t for t in state["trials"]}
    assert len(trials) == len(want_trials) == attrs["trials"], (len(trials), len(want_trials))
    names = [n for n in trials.dtype.names if n.startswith("hparams.")]
    for row in trials:
        want = want_trials[int(row["trial"])]
        assert text(row["status"]) == want["status"], (row, want)
        assert int(row["last_length"]) == want["last_length"], (row, want)
        assert int(row["target_length"]) == want["target_length"], (row, want)
        assert (None if row["ticket"] < 0 else int(row["ticket"])) == want["ticket"], (row, want)
        assert same_metric(float(row["last_metric"]), want["last_metric"]), (row, want)
        assert same_metric(float(row["best_metric"]), want["best_metric"]), (row, want)
        assert int(row["tasks"]) == want["tasks"] and int(row["reports"]) == want["reports"], (row, want)
        assert json.loads(text(row["hparams_json"])) == want["hparams"], (row, want)
        for name in names:
            value = row[name]
            value = text(value) if isinstance(value, bytes) else value.item()
            assert value == want["hparams"][name[len("hparams."):]], (name, value, want)
    best = attrs["best_trial"]
    assert (None if best < 0 else int(best)) == decisions["best_trial"] == state["best_trial"], best
    print(f"trials: {len(trials)} rows equal dlx replay --state (columns {', '.join(names)}); best trial {best}")

    with open(os.path.join(directory, "experiment.yaml")) as frozen:
        assert text(f["config/experiment_yaml"][()]) == frozen.read()
    space = [text(n) for n in f["config/search_space"]["name"]]
    assert ["hparams." + n for n in space] == names, (space, names)
    linked = 0
    for trial_id in f["trial_files"]:
        if os.path.exists(os.path.join(directory, "trials", trial_id, "trial.h5")):
            assert int(f["trial_files"][trial_id].attrs["trial_id"]) == int(trial_id)
            linked += 1
    assert linked > 0, "no trial file reachable through /trial_files"
    print(f"config and search space as frozen; {linked} trial files reached through external links")

dump = subprocess.run(["h5dump", "-d", "/decisions", "-d", "/trials", "-a", "/format_version", path],
                      capture_output=True, text=True)
assert dump.returncode == 0, dump.stderr
for needle in ('DATASET "/decisions"', 'DATASET "/trials"', 'ATTRIBUTE "format_version"', '} "reason";',
               'H5T_STD_I64LE "rank";', 'H5T_IEEE_F64LE "best_metric";'):
    assert needle in dump.stdout, needle
reasons = [d["reason"] for d in expected if "ranks" in d["reason"]]
assert all(f'"{reason}"' in dump.stdout for reason in reasons), "a decision's reason is missing from h5dump"
print(f"h5dump prints both tables ({len(reasons)} ranked reasons found verbatim)")
