#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The soak's verdict (scripts/soak.sh): compares the disturbed run of an experiment with the
undisturbed one, trial by trial, from the files themselves (trial.h5, checkpoints, `dlx replay
--json`). Prints one `# check <name>: PASS|FAIL ...` line per check and exits 1 if any failed.

    check.py REFERENCE_DIR CHAOS_DIR REFERENCE_REPLAY_JSON CHAOS_REPLAY_JSON

Checks
  outcome      every trial of the chaos run is completed, stopped or paused (ASHA's end states),
               or failed with a recorded stop_reason; none is left running; the same state as in
               the reference run.
  metrics      each trial's training and validation tables (steps and every column, bit for bit)
               equal the reference's: no row lost, none duplicated, no value changed.
  tensors      each trial's newest checkpoint has the reference's step and byte-identical tensors.
  decisions    `dlx replay --json` decisions equal, ignoring only what legitimately differs:
               `offset` (byte position in the journal: a requeued ticket may append a record
               the reference has not, e.g. settling a pause its dead trainer could not) and
               `unix` (wall time); an `exit` entry's reason may be "settled by its requeued
               ticket" where the reference's trainer settled it itself. Top-level `journal`
               (path) and `records` (count, for the same reason as `offset`) are not compared.
  replay       both replays clean: no mismatch, no corruption (exit status checked by soak.sh).
"""
import glob
import json
import os
import re
import sys

import h5py
import numpy as np

failed = []


def check(name, ok, detail):
    print(f"# check {name:<10} {'PASS' if ok else 'FAIL'}  {detail}")
    if not ok:
        failed.append(name)


def text(value):
    return value.decode() if isinstance(value, bytes) else value


def trial_ids(directory):
    return sorted(int(os.path.basename(p)) for p in glob.glob(directory + "/trials/*") if os.path.isdir(p))


def record(directory, trial):
    with h5py.File(f"{directory}/trials/{trial}/trial.h5", "r") as f:
        out = {k: text(f.attrs[k]) for k in ("state", "stop_reason", "restarts", "failures")}
        out["tables"] = {}
        for table in ("training", "validation"):
            group = f.get("metrics/" + table)
            out["tables"][table] = {n: group[n][:] for n in group} if group is not None else {}
        events = f.get("restart_events")
        out["events"] = [{k: text(v) for k, v in events[k].attrs.items()}
                         for k in sorted(events, key=int)] if events is not None else []
    return out


def newest_checkpoint(directory, trial):
    files = glob.glob(f"{directory}/trials/{trial}/checkpoints/step-*.h5")
    if not files:
        return None
    return max(files, key=lambda f: int(re.search(r"step-(\d+)\.h5$", f).group(1)))


def tensors(path):
    out = {}
    with h5py.File(path, "r") as f:
        f["tensors"].visititems(
            lambda n, o: out.update({n: o[()].tobytes()}) if isinstance(o, h5py.Dataset) else None)
        return int(f.attrs["step"]), out


def same_column(x, y):
    return x.shape == y.shape and x.tobytes() == y.tobytes()  # bit for bit, NaN padding included


def compare_tables(ref, got):
    """Problems of one trial's metric tables, by name: lost, duplicated, changed rows."""
    problems = []
    for table in ("training", "validation"):
        a, b = ref[table], got[table]
        if set(a) != set(b):
            problems.append(f"{table}: columns {sorted(a)} vs {sorted(b)}")
            continue
        if "steps" not in a:
            continue
        steps_a, steps_b = list(a["steps"]), list(b["steps"])
        duplicated = sorted({s for s in steps_b if steps_b.count(s) > 1})
        lost = sorted(set(steps_a) - set(steps_b))
        extra = sorted(set(steps_b) - set(steps_a))
        if duplicated:
            problems.append(f"{table}: steps reported twice {duplicated}")
        if lost:
            problems.append(f"{table}: steps lost {lost}")
        if extra:
            problems.append(f"{table}: steps the reference has not {extra}")
        changed = [n for n in a if not same_column(a[n], b[n])]
        if changed and not (duplicated or lost or extra):
            problems.append(f"{table}: values differ in {changed}")
    return problems


def normalised_decisions(replay):
    out = []
    for entry in replay["decisions"]:
        entry = {k: v for k, v in entry.items() if k not in ("offset", "unix")}
        if entry["type"] == "exit" and entry["reason"] == "settled by its requeued ticket":
            entry["reason"] = "<settled>"
        out.append(entry)
    return out


def main():
    ref_dir, got_dir, ref_replay_path, got_replay_path = sys.argv[1:5]
    ref_ids, got_ids = trial_ids(ref_dir), trial_ids(got_dir)
    check("trials", ref_ids == got_ids and ref_ids, f"{len(got_ids)} trials (reference {len(ref_ids)})")
    ids = sorted(set(ref_ids) & set(got_ids))
    refs = {t: record(ref_dir, t) for t in ids}
    gots = {t: record(got_dir, t) for t in ids}

    end_states = ("completed", "stopped", "paused")
    bad = []
    for t in ids:
        g, r = gots[t], refs[t]
        if g["state"] == "failed" and not g["stop_reason"]:
            bad.append(f"trial {t} failed without a stop_reason")
        elif g["state"] not in end_states + ("failed",):
            bad.append(f"trial {t} is {g['state']} ({g['stop_reason'] or 'no stop_reason'})")
        elif g["state"] != r["state"]:
            bad.append(f"trial {t} is {g['state']} ({g['stop_reason']}), reference {r['state']}")
    states = {}
    for t in ids:
        states[gots[t]["state"]] = states.get(gots[t]["state"], 0) + 1
    check("outcome", not bad, "; ".join(bad) if bad else f"states {states}, as in the reference")

    problems = []
    for t in ids:
        problems += [f"trial {t}: {p}" for p in compare_tables(refs[t]["tables"], gots[t]["tables"])]
    rows = sum(len(gots[t]["tables"][k].get("steps", [])) for t in ids for k in ("training", "validation"))
    check("metrics", not problems, "; ".join(problems) if problems else
          f"{rows} metric rows in {len(ids)} trials equal to the reference, bit for bit")

    problems, compared = [], 0
    for t in ids:
        a, b = newest_checkpoint(ref_dir, t), newest_checkpoint(got_dir, t)
        if a is None or b is None:
            if a != b:
                problems.append(f"trial {t}: newest checkpoint {b} vs reference {a}")
            continue
        (sa, ta), (sb, tb) = tensors(a), tensors(b)
        if sa != sb:
            problems.append(f"trial {t}: newest checkpoint at step {sb}, reference {sa}")
        elif ta.keys() != tb.keys() or any(ta[n] != tb[n] for n in ta):
            problems.append(f"trial {t}: tensors at step {sb} differ from the reference")
        else:
            compared += 1
    check("tensors", not problems, "; ".join(problems) if problems else
          f"the newest checkpoints of {compared} trials are byte-identical to the reference's")

    with open(ref_replay_path) as f:
        ref_replay = json.load(f)
    with open(got_replay_path) as f:
        got_replay = json.load(f)
    check("replay", ref_replay["mismatch"] is None and got_replay["mismatch"] is None,
          f"mismatch: {got_replay['mismatch']} (reference {ref_replay['mismatch']}); torn tail "
          f"{got_replay['torn_tail']}; records {got_replay['records']} (reference {ref_replay['records']})")
    a, b = normalised_decisions(ref_replay), normalised_decisions(got_replay)
    first = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), None)
    same = a == b and ref_replay["best_trial"] == got_replay["best_trial"]
    if same:
        detail = f"{len(b)} decisions equal (best trial {got_replay['best_trial']})"
    elif first is not None:
        detail = f"decision {first} differs: {json.dumps(b[first])} vs reference {json.dumps(a[first])}"
    else:
        detail = f"{len(b)} decisions vs {len(a)}; best trial {got_replay['best_trial']} vs {ref_replay['best_trial']}"
    check("decisions", same, detail)

    restarts = {}
    for t in ids:
        for e in gots[t]["events"]:
            restarts[e["cause"]] = restarts.get(e["cause"], 0) + 1
    lost = [int(e["steps_lost"]) for t in ids for e in gots[t]["events"]]
    print(f"# restarts recorded in trial.h5: {restarts or 'none'}; steps_lost per restart (metric rows redone; "
          f"ASHA reports only at rungs): {lost}")
    for t in ids:
        for e in gots[t]["events"]:
            print(f"#   trial {t}: {e['cause']:<7} resumed at {e['resumed_step']:>4}, steps_lost "
                  f"{e['steps_lost']}, downtime {e['downtime_seconds']} s: {e['reason']}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
