#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Compare a resumed trial with an uninterrupted reference run of the same trial.

    compare_checkpoints.py REFERENCE_TRIAL_DIR TRIAL_DIR [--restarts N] [--notices N]
                           [--crashes N] [--causes C,...] [--tensor NAME]...

A trial directory holds trial.h5 and checkpoints/step-<N>.h5. The two trials must end at the
same final checkpoint step with byte-identical tensors (every dataset under /tensors, same
names), the same training and validation metric tables, and the resumed one must be completed.
Restart history (trial.h5 /restart_events), each check only when its option is given:
  --restarts N  exactly N restart events, whatever their cause
  --notices N   exactly N events of a checkpoint-and-exit at a signal (cause "preemption",
                "time_limit", "requeue", or "notice" when the run could not tell which)
  --crashes N   exactly N events with cause "crash", and the attribute failures == N
  --causes C,.. the events' causes, in order (e.g. "requeue": one restart after scontrol requeue)
  --tensor NAME this tensor must exist in both (repeatable), so that a trainer that saved
                nothing at all cannot pass as "identical"
  --unseeded NAME a tensor whose bytes may differ (repeatable): a generator the trainer neither
                seeds nor draws from (rng/rank-0/python of a script that seeds torch only)
Exit status 0 when identical, 1 with the first difference on stderr otherwise.
Used by tests/cluster/resume_lib.sh (compare_trials) and tests/launcher/resume_trainer_test.sh.
"""
import argparse
import glob
import re
import sys

import h5py
import numpy as np


def text(value):
    return value.decode() if isinstance(value, bytes) else value


def final_checkpoint(trial_dir):
    files = glob.glob(trial_dir + "/checkpoints/step-*.h5")
    if not files:
        raise AssertionError(f"no checkpoint in {trial_dir}/checkpoints")
    return max(files, key=lambda f: int(re.search(r"step-(\d+)\.h5$", f).group(1)))


def tensors(path):
    """(step, {tensor name: raw bytes}) of one checkpoint file."""
    out = {}
    with h5py.File(path, "r") as f:
        f["tensors"].visititems(
            lambda name, obj: out.update({name: obj[()].tobytes()})
            if isinstance(obj, h5py.Dataset) else None)
        return int(f.attrs["step"]), out


def compare(args):
    (ref_step, ref_tensors) = tensors(final_checkpoint(args.reference))
    (got_step, got_tensors) = tensors(final_checkpoint(args.trial))
    assert ref_step == got_step, f"final steps differ: {ref_step} vs {got_step}"
    for name in args.tensor:
        assert name in ref_tensors and name in got_tensors, \
            f"tensor {name} missing (reference: {name in ref_tensors}, resumed: {name in got_tensors})"
    assert ref_tensors.keys() == got_tensors.keys(), \
        f"tensor names differ: {sorted(ref_tensors)} vs {sorted(got_tensors)}"
    differing = [n for n in ref_tensors if ref_tensors[n] != got_tensors[n] and n not in args.unseeded]
    assert not differing, f"tensors differ from the uninterrupted run: {differing}"

    with h5py.File(args.reference + "/trial.h5", "r") as ref, \
            h5py.File(args.trial + "/trial.h5", "r") as got:
        state = text(got.attrs["state"])
        assert state == "completed", f"the resumed trial is {state}, not completed"
        for table in ("training", "validation"):
            assert set(ref["metrics/" + table]) == set(got["metrics/" + table]), \
                f"metrics {table} hold {sorted(got['metrics/' + table])}, not {sorted(ref['metrics/' + table])}"
            for name in ref["metrics/" + table]:
                if name == "wall_time":  # when each row was reported: the runs' own
                    continue
                x, y = ref[f"metrics/{table}/{name}"][:], got[f"metrics/{table}/{name}"][:]
                assert x.shape == y.shape and np.array_equal(x, y), \
                    f"metrics {table}/{name} differ: {x} vs {y}"
        group = got["restart_events"] if "restart_events" in got else {}
        events = [dict(group[k].attrs) for k in sorted(group, key=int)]
        causes = [text(e["cause"]) for e in events]
        for event in events:
            print("#   restart:", {k: text(v) for k, v in event.items()})
        if args.restarts is not None:
            assert len(events) == args.restarts, \
                f"{len(events)} restart events, expected {args.restarts}: {causes}"
        if args.notices is not None:
            # A checkpoint-and-exit at a signal: its cause as the run could tell it (format 3), or
            # "notice" when it could not (and in older records).
            notices = sum(cause in ("notice", "preemption", "time_limit", "requeue") for cause in causes)
            assert notices == args.notices, f"{notices} notice restarts, expected {args.notices}: {causes}"
        if args.causes is not None:
            assert causes == args.causes.split(","), f"restart causes {causes}, expected {args.causes}"
        if args.crashes is not None:
            assert causes.count("crash") == args.crashes, \
                f"{causes.count('crash')} crash restarts, expected {args.crashes}: {causes}"
            failures = int(got.attrs["failures"])
            assert failures == args.crashes, f"failures = {failures}, expected {args.crashes}"
    print(f"# identical to the uninterrupted run: final step {got_step}, {len(got_tensors)} "
          f"tensors, metrics equal; restarts {causes}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("reference", help="trial directory of the uninterrupted run")
    parser.add_argument("trial", help="trial directory of the resumed run")
    parser.add_argument("--restarts", type=int, help="expected number of restart events")
    parser.add_argument("--notices", type=int, help="expected number of notice restarts")
    parser.add_argument("--crashes", type=int, help="expected number of crash restarts")
    parser.add_argument("--causes", help="the restart events' causes, in order, comma-separated")
    parser.add_argument("--tensor", action="append", default=[], help="a tensor that must exist")
    parser.add_argument("--unseeded", action="append", default=[],
                        help="a tensor of an unseeded, unused generator, whose bytes may differ")
    args = parser.parse_args()
    try:
        compare(args)
    except AssertionError as error:
        print(f"FAIL: {args.trial} vs {args.reference}: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
