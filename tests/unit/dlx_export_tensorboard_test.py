#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""`dlx export tensorboard` read back by an independent reader.

The real dlx binary exports a synthetic experiment (dlx_write_export_sample); every event file is
then decoded here without any dlx code: the TFRecord framing and both masked CRC-32Cs by hand
(crcmod), the Events with protobuf classes that protoc generates now from export/proto, and the
expected values straight from trial.h5 with h5py. Then the refusals, each with its message and
with nothing left behind.

usage: dlx_export_tensorboard_test.py DLX WRITE_SAMPLE PROTO_DIR
"""
import glob
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import crcmod.predefined
import h5py
import numpy

DLX, WRITE_SAMPLE, PROTO_DIR = sys.argv[1:4]
crc32c = crcmod.predefined.mkCrcFun("crc-32c")
failures = []


def check(condition, message):
    if not condition:
        failures.append(message)
        print("FAIL:", message)


def masked(crc):
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def read_records(path):
    """The data of every TFRecord in `path`, both CRCs checked."""
    data = open(path, "rb").read()
    records, offset = [], 0
    while offset < len(data):
        header = data[offset:offset + 8]
        (length,) = struct.unpack("<Q", header)
        (length_crc,) = struct.unpack("<I", data[offset + 8:offset + 12])
        assert length_crc == masked(crc32c(header)), f"{path}: bad length CRC at {offset}"
        body = data[offset + 12:offset + 12 + length]
        (body_crc,) = struct.unpack("<I", data[offset + 12 + length:offset + 16 + length])
        assert len(body) == length and body_crc == masked(crc32c(body)), f"{path}: bad data CRC at {offset}"
        records.append(body)
        offset += 16 + length
    return records


def generated_classes(work):
    out = os.path.join(work, "pb")
    os.makedirs(out)
    subprocess.run(["protoc", f"--proto_path={PROTO_DIR}", f"--python_out={out}",
                    "dlx/tensorboard/event.proto", "dlx/tensorboard/hparams.proto"], check=True)
    sys.path.insert(0, out)
    from dlx.tensorboard import event_pb2, hparams_pb2  # noqa: E402 (generated just now)
    return event_pb2, hparams_pb2


def run_dlx(args, as_nobody=False, dlx=DLX):
    prefix = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"] if as_nobody else []
    return subprocess.run(prefix + [dlx] + args, capture_output=True, text=True)


def event_file(run_dir):
    files = [f for f in os.listdir(run_dir) if "tfevents" in f]
    check(len(files) == 1, f"{run_dir}: {len(files)} event files, not 1: {os.listdir(run_dir)}")
    return os.path.join(run_dir, files[0])


def decode(path, event_pb2):
    events = []
    for record in read_records(path):
        event = event_pb2.Event()
        event.ParseFromString(record)
        events.append(event)
    check(events and events[0].file_version == "brain.Event:2", f"{path}: the first event is not the file version")
    return events


def expected_scalars(h5):
    """(tag, step) -> (wall_time, float32 value) for every reported value of trial.h5."""
    expected = {}
    updated = float(h5.attrs["updated_unix"])
    for group in ("training", "validation"):
        if f"metrics/{group}" not in h5:
            continue
        table = h5[f"metrics/{group}"]
        steps = table["steps"][()]
        walls = table["wall_time"][()] if "wall_time" in table else [math.nan] * len(steps)
        for name in table:
            if name in ("steps", "wall_time"):
                continue
            metric = name.replace("\u2215", "/")  # trial.h5 writes a metric's '/' as U+2215
            for step, wall, value in zip(steps, walls, table[name][()]):
                if not math.isnan(value):
                    expected[(f"{group}/{metric}", int(step))] = (updated if math.isnan(wall) else float(wall),
                                                               numpy.float32(value))
    return expected


# write_export_sample.cpp's system samples of trial 1 (created 1700000100), rank 1: step =
# milliseconds since the trial's creation.
SYSTEM_SCALARS = {1: {
    ("system/rank-1/memory_bytes", 1500): (1700000101.5, numpy.float32(1048576)),
    ("system/rank-1/processes", 1500): (1700000101.5, numpy.float32(3)),
    ("system/rank-1/memory_bytes", 2500): (1700000102.5, numpy.float32(2097152)),
    ("system/rank-1/cpu_percent", 2500): (1700000102.5, numpy.float32(87.5)),
    ("system/rank-1/processes", 2500): (1700000102.5, numpy.float32(3)),
    ("system/rank-1/memory_bytes", 3250): (1700000103.25, numpy.float32(2097152)),
    ("system/rank-1/cpu_percent", 3250): (1700000103.25, numpy.float32(12.25)),
    ("system/rank-1/processes", 3250): (1700000103.25, numpy.float32(2)),
    ("system/rank-1/gpu0_util_percent", 3250): (1700000103.25, numpy.float32(97.5)),
    ("system/rank-1/gpu0_memory_bytes", 3250): (1700000103.25, numpy.float32(4194304)),
}}


def hparams_plugin(value, hparams_pb2):
    check(value.metadata.plugin_data.plugin_name == "hparams", f"{value.tag}: plugin is not hparams")
    data = hparams_pb2.HParamsPluginData()
    data.ParseFromString(value.metadata.plugin_data.content)
    check(data.version == 0, f"{value.tag}: version {data.version}")
    return data


def check_trial(run_dir, trial_h5, event_pb2, hparams_pb2):
    events = decode(event_file(run_dir), event_pb2)
    with h5py.File(trial_h5, "r") as h5:
        expected = expected_scalars(h5)
        expected.update(SYSTEM_SCALARS.get(int(h5.attrs["trial_id"]), {}))
        hparams = json.loads(h5.attrs["hparams_json"])
        state = h5.attrs["state"]
        state = state.decode() if isinstance(state, bytes) else str(state)
    scalars, starts, ends = {}, [], []
    for event in events[1:]:
        for value in event.summary.value:
            if value.tag == "_hparams_/session_start_info":
                starts.append(hparams_plugin(value, hparams_pb2).session_start_info)
            elif value.tag == "_hparams_/session_end_info":
                ends.append(hparams_plugin(value, hparams_pb2).session_end_info)
            else:
                key = (value.tag, event.step)
                check(key not in scalars, f"{run_dir}: {key} written twice")
                check(not math.isnan(value.simple_value), f"{run_dir}: {key} is NaN")
                scalars[key] = (event.wall_time, numpy.float32(value.simple_value))
    check(scalars == expected, f"{run_dir}: scalars {sorted(scalars.items())} != trial.h5's {sorted(expected.items())}")
    check(len(starts) == 1 and len(ends) == 1, f"{run_dir}: {len(starts)} session starts, {len(ends)} ends")
    if starts:
        got = starts[0].hparams
        check(set(got) == set(hparams), f"{run_dir}: hparams {set(got)} != {set(hparams)}")
        for name, want in hparams.items():
            value = got[name]
            kind = ("bool_value" if isinstance(want, bool) else "string_value" if isinstance(want, str)
                    else "number_value")
            check(value.WhichOneof("kind") == kind and getattr(value, kind) == want,
                  f"{run_dir}: hparam {name} = {value} (want {kind} {want!r})")
    if ends:
        status = {"completed": hparams_pb2.STATUS_SUCCESS, "failed": hparams_pb2.STATUS_FAILURE,
                  "running": hparams_pb2.STATUS_RUNNING}[state]
        check(ends[0].status == status, f"{run_dir}: session end status {ends[0].status}, trial is {state}")
    return len(events)


def check_experiment(out, event_pb2, hparams_pb2):
    events = decode(event_file(out), event_pb2)
    values = [v for e in events[1:] for v in e.summary.value if v.tag == "_hparams_/experiment"]
    check(len(values) == 1, f"{out}: {len(values)} experiment summaries")
    experiment = hparams_plugin(values[0], hparams_pb2).experiment
    check(experiment.name == "export-sample", f"experiment name {experiment.name!r}")
    types = {info.name: info.type for info in experiment.hparam_infos}
    check(types == {"lr": hparams_pb2.DATA_TYPE_FLOAT64, "layers": hparams_pb2.DATA_TYPE_FLOAT64,
                    "optimizer": hparams_pb2.DATA_TYPE_STRING, "nesterov": hparams_pb2.DATA_TYPE_BOOL},
          f"hparam infos {types}")
    tags = [info.name.tag for info in experiment.metric_infos]
    check(tags[:1] == ["validation/loss"], f"the searcher metric is not first: {tags}")
    check(sorted(tags) == ["training/accuracy", "training/grad/norm", "training/loss", "validation/loss",
                           "validation/top5"],
          f"metric infos {tags}")
    return len(events)


def leftovers(parent):
    return [name for name in os.listdir(parent) if "dlx-export" in name]


def test_export(work, exp, event_pb2, hparams_pb2):
    out = os.path.join(work, "out")
    result = run_dlx(["export", "tensorboard", exp, out, "--json"])
    check(result.returncode == 0, f"export failed: {result.stderr}")
    if result.returncode != 0:
        return
    summary = json.loads(result.stdout)
    runs = sorted(d for d in os.listdir(out) if os.path.isdir(os.path.join(out, d)))
    check(runs == ["trial-1", "trial-2", "trial-3"], f"runs {runs} (trial 4 has no trial.h5)")
    events = check_experiment(out, event_pb2, hparams_pb2)
    for run in runs:
        events += check_trial(os.path.join(out, run), os.path.join(exp, "trials", run[6:], "trial.h5"),
                              event_pb2, hparams_pb2)
    size = sum(os.path.getsize(f) for f in glob.glob(os.path.join(out, "**", "*tfevents*"), recursive=True))
    check(summary["runs"] == 3 and summary["events"] == events and summary["bytes"] == size,
          f"--json summary {summary}; counted {events} events, {size} bytes")
    check(leftovers(work) == [], f"temporary directories left: {leftovers(work)}")

    # An existing empty OUTDIR is used; a non-empty one refused (and kept) unless --force.
    empty = os.path.join(work, "empty")
    os.mkdir(empty)
    result = run_dlx(["export", "tensorboard", exp, empty + "/"])  # a trailing slash is the same OUTDIR
    check(result.returncode == 0 and "wrote 3 runs" in result.stdout and "tensorboard --logdir" in result.stdout
          and os.path.isdir(os.path.join(empty, "trial-1")) and leftovers(empty) == [],
          f"into an empty OUTDIR: {result.returncode} {result.stdout} {result.stderr} {os.listdir(empty)}")
    keep = os.path.join(out, "notes.txt")
    open(keep, "w").write("mine")
    result = run_dlx(["export", "tensorboard", exp, out])
    check(result.returncode == 1 and "exists and is not empty" in result.stderr and "--force" in result.stderr
          and os.path.exists(keep), f"non-empty OUTDIR: {result.returncode} {result.stderr}")
    result = run_dlx(["export", "tensorboard", exp, out, "--force"])
    check(result.returncode == 0 and not os.path.exists(keep) and os.path.isdir(os.path.join(out, "trial-1")),
          f"--force: {result.returncode} {result.stderr}")
    check(leftovers(work) == [], f"temporary directories left after --force: {leftovers(work)}")


def expect_refusal(args, words, label, as_nobody=False, dlx=DLX, out=None):
    result = run_dlx(args, as_nobody=as_nobody, dlx=dlx)
    check(result.returncode == 1, f"{label}: exit {result.returncode}, not 1: {result.stdout} {result.stderr}")
    for word in words:
        check(word in result.stderr, f"{label}: {word!r} not in the message: {result.stderr!r}")
    if out is not None:
        check(not os.path.exists(out), f"{label}: {out} was created")
        check(leftovers(os.path.dirname(out)) == [], f"{label}: left {leftovers(os.path.dirname(out))}")


def test_refusals(work, exp):
    out = os.path.join(work, "refused")
    expect_refusal(["export", "tensorboard", os.path.join(work, "nope"), out],
                   ["nope", "no such directory"], "a missing directory", out=out)
    plain = os.path.join(work, "plain")
    os.mkdir(plain)
    expect_refusal(["export", "tensorboard", plain, out],
                   ["not an experiment directory", "experiment.yaml"], "not an experiment", out=out)
    expect_refusal(["export", "tensorboard", exp, os.path.join(work, "no", "parent", "out")],
                   ["parent directory", "does not exist", "create it first"], "a missing parent")

    # A trial.h5 of a newer format: the trial named, how to fix, nothing written.
    newer = os.path.join(work, "newer")
    shutil.copytree(exp, newer)
    with h5py.File(os.path.join(newer, "trials", "2", "trial.h5"), "r+") as h5:
        h5.attrs["format_version"] = numpy.int64(99)
    expect_refusal(["export", "tensorboard", newer, out],
                   ["cannot export trial 2", "trials/2/trial.h5", "format_version 99 is newer", "upgrade dlx"],
                   "a newer trial.h5", out=out)

    # A trial.h5 copied into another trial's directory would show one trial twice.
    copied = os.path.join(work, "copied")
    shutil.copytree(exp, copied)
    os.makedirs(os.path.join(copied, "trials", "5"))
    shutil.copy(os.path.join(copied, "trials", "1", "trial.h5"), os.path.join(copied, "trials", "5"))
    expect_refusal(["export", "tensorboard", copied, out], ["trials/5/trial.h5 holds trial 1", "move it back"],
                   "a trial.h5 in another trial's directory", out=out)
    for inside in (exp, os.path.join(exp, "trials"), work):
        expect_refusal(["export", "tensorboard", exp, inside, "--force"],
                       ["overlaps the experiment directory", "outside"], f"OUTDIR {inside} with --force")
    check(os.path.isfile(os.path.join(exp, "trials", "1", "trial.h5")), "--force onto the experiment removed it")
    expect_refusal(["export", "tensorboard", exp, "/"], ["has no name of its own"], "OUTDIR /")
    a_file = os.path.join(work, "a-file")
    open(a_file, "w").write("mine")
    expect_refusal(["export", "tensorboard", exp, a_file], ["a-file exists and is not a directory"],
                   "OUTDIR is a file")
    check(open(a_file).read() == "mine", "OUTDIR that is a file was changed")

    if os.geteuid() != 0:
        print("not root: skipping the tests as another user (EACCES)")
        return
    # As another user (nobody): an experiment it cannot read, a parent it cannot write.
    shared = tempfile.mkdtemp(prefix="dlx-export-nobody-")
    try:
        os.chmod(shared, 0o755)
        dlx = os.path.join(shared, "dlx")  # the build tree may be out of nobody's reach
        shutil.copy(DLX, dlx)
        os.chmod(dlx, 0o755)
        private = os.path.join(shared, "private")
        shutil.copytree(exp, private)
        os.chmod(private, 0o700)
        writable = os.path.join(shared, "writable")
        os.mkdir(writable)
        os.chmod(writable, 0o777)
        expect_refusal(["export", "tensorboard", private, os.path.join(writable, "out")],
                       ["cannot read", "private", "Permission denied"], "another user's experiment",
                       as_nobody=True, dlx=dlx, out=os.path.join(writable, "out"))
        readable = os.path.join(shared, "readable")
        shutil.copytree(exp, readable)
        for root, dirs, files in os.walk(readable):
            os.chmod(root, 0o755)
            for name in files:
                os.chmod(os.path.join(root, name), 0o644)
        expect_refusal(["export", "tensorboard", readable, os.path.join(shared, "out")],
                       ["cannot write", "Permission denied", "a directory you can write"],
                       "an unwritable parent", as_nobody=True, dlx=dlx, out=os.path.join(shared, "out"))
    finally:
        shutil.rmtree(shared)


def main():
    work = tempfile.mkdtemp(prefix="dlx-export-test-")
    try:
        event_pb2, hparams_pb2 = generated_classes(work)
        exp = os.path.join(work, "exp")
        subprocess.run([WRITE_SAMPLE, exp], check=True)
        test_export(work, exp, event_pb2, hparams_pb2)
        test_refusals(work, exp)
    finally:
        shutil.rmtree(work)
    if failures:
        print(f"{len(failures)} failures")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
