# SPDX-License-Identifier: Apache-2.0
"""Packed array tasks (resources.trials_per_task: 4, or trials_per_gpu) under the real dlx-launch,
without Slurm (a requeue is dlx-launch run again): a random search of 8 trials on 2 tasks; task 0
runs trials 0, 2, 4, 6 at once, each once, in slots 0-3, with its own record and hyperparameters;
one trial failing leaves the others to complete; one asking for a requeue (exit 85) ends the
task with 85 once the others have ended, and the task run again runs only that trial; with
trials_per_gpu each slot sees one of the task's GPUs and the memory fraction 1/N.
Run with /usr/bin/python3; DLX_LAUNCH, DLX_LIBRARY and PYTHONPATH (python/) from CMake."""
import json
import os
import shutil
import tempfile

from task_runs import launch, progress, runs, states

TRAINER = """
import json, os, sys, time
import dlx
trial = dlx.Trial()
started = time.time()
marker = os.path.join(os.environ["DLX_EXPERIMENT_DIR"], f"exit-{trial.id}")
code = None
if os.path.exists(marker):
    code = int(open(marker).read())
    os.remove(marker)
time.sleep(2)
with open(os.path.join(os.environ["DLX_EXPERIMENT_DIR"], "runs.txt"), "a") as f:
    f.write(json.dumps({"trial": trial.id, "ticket": os.environ["DLX_TICKET"], "slot": os.environ.get("DLX_SLOT"),
                        "gpu": os.environ.get("CUDA_VISIBLE_DEVICES"),
                        "fraction": os.environ.get("DLX_GPU_MEMORY_FRACTION"), "lr": trial.hparam("lr"),
                        "mps": os.environ.get("CUDA_MPS_PIPE_DIRECTORY"),
                        "mps_up": os.path.exists(os.path.join(os.environ.get("CUDA_MPS_PIPE_DIRECTORY", "/-"), "control")),
                        "start": started, "end": time.time()}) + "\\n")
if code is not None:
    trial.close()
    sys.exit(code)
trial.report_validation(1, loss=trial.hparam("lr"))
trial.finish()
"""


def experiment(resources="{trials_per_task: 4}"):
    directory = tempfile.mkdtemp(prefix="dlx-task-slots-")
    trainer = os.path.join(directory, "trainer.py")
    with open(trainer, "w") as f:
        f.write(TRAINER)
    with open(os.path.join(directory, "experiment.yaml"), "w") as f:
        f.write(f"name: task-slots\nentrypoint: {json.dumps(['/usr/bin/python3', trainer])}\nseed: 7\n"
                "hyperparameters: {lr: {type: double, minval: 0.001, maxval: 1}}\n"
                "searcher: {name: random, metric: loss, max_trials: 8, max_length: {batches: 1}}\n"
                f"resources: {resources}\nmax_restarts: 0\n")
    return directory


def most_at_once(ran):
    """The most trainers that were running at one moment."""
    return max(sum(1 for r in ran if r["start"] <= moment["start"] < r["end"]) for moment in ran)


print("8 trials on 2 array tasks, 4 at once:")
directory = experiment()
output, took = launch(directory, 0, 0)
for slot in range(4):
    assert f"dlx-launch: task 0: ticket {2 * slot} in slot {slot}" in output, output
ran = runs(directory)
assert sorted(r["trial"] for r in ran) == [0, 2, 4, 6], ran
assert sorted(r["slot"] for r in ran) == ["0", "1", "2", "3"], ran
assert most_at_once(ran) == 4, ran
assert all(r["trial"] == int(r["ticket"]) for r in ran), ran
launch(directory, 1, 0)
ran = runs(directory)
assert sorted(r["trial"] for r in ran) == list(range(8)), ran
assert states(directory) == {t: "completed" for t in range(8)}, states(directory)
assert len({r["lr"] for r in ran}) == 8, ran
assert progress(directory, 0) == {"task": 0, "tickets": [0, 2, 4, 6], "done": [0, 2, 4, 6]}
assert progress(directory, 1) == {"task": 1, "tickets": [1, 3, 5, 7], "done": [1, 3, 5, 7]}
print(f"  task 0 ran trials 0, 2, 4, 6 in slots 0-3, 4 at once ({took:.1f} s for four 2-s trainers); task 1 ran "
      "1, 3, 5, 7; each once, completed")
shutil.rmtree(directory)

print("one trial fails for good, the others complete:")
directory = experiment()
with open(os.path.join(directory, "exit-4"), "w") as f:
    f.write("3")
launch(directory, 0, 3)
assert states(directory) == {0: "completed", 2: "completed", 4: "failed", 6: "completed"}, states(directory)
assert progress(directory, 0)["done"] == [0, 2, 4, 6]
print("  trial 4 failed; trials 0, 2, 6 completed; the task exits 3")
shutil.rmtree(directory)

print("one trial asks for a requeue (exit 85): the others end, then the task again runs only it:")
directory = experiment()
with open(os.path.join(directory, "exit-2"), "w") as f:
    f.write("85")
launch(directory, 0, 85)
assert progress(directory, 0)["done"] == [0, 4, 6], progress(directory, 0)
assert states(directory)[0] == "completed" and states(directory)[6] == "completed", states(directory)
output, _ = launch(directory, 0, 0)
assert "dlx-launch: task 0: 3 of its 4 tickets done; going on with ticket 2" in output, output
assert sorted(r["trial"] for r in runs(directory)) == [0, 2, 2, 4, 6], runs(directory)
assert states(directory) == {0: "completed", 2: "completed", 4: "completed", 6: "completed"}, states(directory)
print("  trials 0, 4, 6 completed in the first run; the second ran trial 2 alone")
shutil.rmtree(directory)

print("trials_per_gpu: 2 on the task's 2 GPUs: each slot sees one, and half its memory:")
directory = experiment("{gpus_per_node: 2, trials_per_gpu: 2}")
launch(directory, 0, 0, {"CUDA_VISIBLE_DEVICES": "4,7"})
ran = runs(directory)
assert sorted((r["slot"], r["gpu"]) for r in ran) == [("0", "4"), ("1", "7"), ("2", "4"), ("3", "7")], ran
assert all(r["fraction"] == "0.5" for r in ran), ran
print("  slots 0-3 on GPUs 4, 7, 4, 7 with DLX_GPU_MEMORY_FRACTION 0.5")
assert all(r["mps"] is None for r in ran), ran
shutil.rmtree(directory)

print("trials_per_gpu: 2 with mps: one MPS daemon for the task (a stand-in), the slots its clients:")
stand_ins = os.path.join(os.path.dirname(os.path.abspath(__file__)), "stand_ins")
directory = experiment("{gpus_per_node: 2, trials_per_gpu: 2, mps: true}")
record = os.path.join(directory, "mps-record.txt")
tmp = tempfile.mkdtemp(prefix="dlx-mps-tmp-")
output, _ = launch(directory, 0, 0, {"CUDA_VISIBLE_DEVICES": "4,7", "PATH": f"{stand_ins}:/usr/bin:/bin",
                                     "DLX_TEST_MPS_RECORD": record, "TMPDIR": tmp})
ran = runs(directory)
# MPS numbers the task's GPUs 4 and 7 as 0 and 1: a client naming 4 or 7 would fail.
assert sorted((r["slot"], r["gpu"]) for r in ran) == [("0", "0"), ("1", "1"), ("2", "0"), ("3", "1")], ran
assert len({r["mps"] for r in ran}) == 1 and all(r["mps"] and r["mps_up"] for r in ran), ran
assert "CUDA MPS started" in output, output
lines = open(record).read().splitlines()
assert len(lines) == 2 and lines[0].startswith("start ") and lines[0].endswith(" devices=4,7 mode=700"), lines
assert lines[1] == f"command quit pipe={ran[0]['mps']}", lines
assert os.listdir(tmp) == [], os.listdir(tmp)  # the daemon's directory is gone with it
print(f"  one daemon for GPUs 4,7 ({ran[0]['mps']}); slots on MPS devices 0, 1, 0, 1; stopped, its directory removed")
shutil.rmtree(directory)

print("mps where the node has no MPS control program: the trials run without it, and the log says why:")
directory = experiment("{gpus_per_node: 2, trials_per_gpu: 2, mps: true}")
output, _ = launch(directory, 0, 0, {"CUDA_VISIBLE_DEVICES": "4,7", "PATH": "/usr/bin:/bin", "TMPDIR": tmp})
ran = runs(directory)
assert sorted((r["slot"], r["gpu"]) for r in ran) == [("0", "4"), ("1", "7"), ("2", "4"), ("3", "7")], ran
assert all(r["mps"] is None for r in ran), ran
assert ("resources.mps: CUDA MPS did not start: nvidia-cuda-mps-control is not on this node's PATH (the NVIDIA "
        "driver's utilities install it); the trials share the GPUs in turns") in output, output
assert os.listdir(tmp) == [], os.listdir(tmp)
print("  ran on GPUs 4, 7 without MPS; the log says why")
shutil.rmtree(directory)
shutil.rmtree(tmp)
print("ok")
