# SPDX-License-Identifier: Apache-2.0
"""An array task that runs several tickets in turn (resources.max_array_tasks below the ticket
count) under the real dlx-launch, without Slurm (a requeue is dlx-launch run again): a random
search of 5 trials on 2 tasks; task 0 runs trials 0, 2, 4 and task 1 trials 1, 3, each once, with
its own record and the searcher's hyperparameters; a trainer's exit 85 ends the task, which
resumes at the first ticket not done; a failed trial does not stop the task's next one; a task
run again after its last ticket runs nothing; dlx-launch failing on a ticket stops the task and
names the tickets it left, which the task run again (a requeue) runs.
Run with /usr/bin/python3; DLX_LAUNCH, DLX_LIBRARY and PYTHONPATH (python/) from CMake."""
import json
import os
import shutil
import tempfile

import task_runs
from task_runs import progress, runs, states

TRAINER = """
import json, os, sys
import dlx
trial = dlx.Trial()
runs = os.path.join(os.environ["DLX_EXPERIMENT_DIR"], "runs.txt")
with open(runs, "a") as f:
    f.write(json.dumps({"trial": trial.id, "ticket": os.environ["DLX_TICKET"],
                        "lr": trial.hparam("lr"), "hp": os.environ.get("DLX_HP_LR")}) + "\\n")
marker = os.path.join(os.environ["DLX_EXPERIMENT_DIR"], f"exit-{trial.id}")
if os.path.exists(marker):
    code = int(open(marker).read())
    os.remove(marker)
    trial.close()
    sys.exit(code)
trial.report_validation(1, loss=trial.hparam("lr"))
trial.finish()
"""


def experiment():
    directory = tempfile.mkdtemp(prefix="dlx-task-tickets-")
    trainer = os.path.join(directory, "trainer.py")
    with open(trainer, "w") as f:
        f.write(TRAINER)
    with open(os.path.join(directory, "experiment.yaml"), "w") as f:
        f.write(f"name: task-tickets\nentrypoint: {json.dumps(['/usr/bin/python3', trainer])}\nseed: 7\n"
                "hyperparameters: {lr: {type: double, minval: 0.001, maxval: 1}}\n"
                "searcher: {name: random, metric: loss, max_trials: 5, max_length: {batches: 1}}\n"
                "resources: {max_array_tasks: 2}\nmax_restarts: 0\n")
    return directory


def launch(directory, task, expect):
    return task_runs.launch(directory, task, expect)[0]


print("5 trials on 2 array tasks:")
directory = experiment()
output = launch(directory, 0, 0)
assert "dlx-launch: task 0: ticket 4 (3 of 3)" in output, output
launch(directory, 1, 0)
ran = runs(directory)
assert [(r["trial"], r["ticket"]) for r in ran] == [(0, "0"), (2, "2"), (4, "4"), (1, "1"), (3, "3")], ran
assert states(directory) == {0: "completed", 1: "completed", 2: "completed", 3: "completed", 4: "completed"}
lrs = [r["lr"] for r in ran]
assert len(set(lrs)) == 5 and all(0.001 <= lr <= 1 for lr in lrs), lrs
assert all(float(r["hp"]) == r["lr"] for r in ran), ran  # DLX_HP_LR is each trial's own
assert progress(directory, 0) == {"task": 0, "tickets": [0, 2, 4], "done": [0, 2, 4]}
assert progress(directory, 1) == {"task": 1, "tickets": [1, 3], "done": [1, 3]}
print(f"  task 0 ran trials 0, 2, 4; task 1 ran 1, 3; each once, completed, lr {sorted(round(x, 4) for x in lrs)}")
# The task once more (a requeue after its last ticket): nothing runs again, and it says so.
output = launch(directory, 0, 0)
assert "dlx-launch: task 0: all 3 of its tickets are done; nothing left to run" in output, output
assert len(runs(directory)) == 5, runs(directory)
# The same plan as one task per ticket: trial ids and hyperparameters do not depend on the tasks.
plain = experiment()
with open(os.path.join(plain, "experiment.yaml")) as f:
    text = f.read().replace("resources: {max_array_tasks: 2}\n", "")
with open(os.path.join(plain, "experiment.yaml"), "w") as f:
    f.write(text)
for ticket in range(5):
    launch(plain, ticket, 0)
assert sorted((r["trial"], r["lr"]) for r in runs(plain)) == sorted((r["trial"], r["lr"]) for r in ran)
assert not os.path.exists(os.path.join(plain, "tasks"))
print("  the same trials and hyperparameters as one array task per trial")
shutil.rmtree(plain)
shutil.rmtree(directory)

print("a requeue (exit 85) during the task's second ticket, then the task again:")
directory = experiment()
with open(os.path.join(directory, "exit-2"), "w") as f:
    f.write("85")
launch(directory, 0, 85)
assert progress(directory, 0)["done"] == [0]
output = launch(directory, 0, 0)
assert "dlx-launch: task 0: 1 of its 3 tickets done; going on with ticket 2" in output, output
assert [r["trial"] for r in runs(directory)] == [0, 2, 2, 4], runs(directory)  # trial 0 not run again
assert states(directory) == {0: "completed", 2: "completed", 4: "completed"}, states(directory)
print("  trial 0 is not run again; trial 2 resumes, then trial 4 runs")
shutil.rmtree(directory)

print("the first form of tasks/<task>.json, a count of the first tickets, is still read:")
directory = experiment()
launch(directory, 0, 0)
with open(os.path.join(directory, "tasks", "0.json"), "w") as f:
    f.write('{"task": 0, "tickets_done": 2, "tickets": [0, 2, 4]}\n')
output = launch(directory, 0, 0)
assert "dlx-launch: task 0: 2 of its 3 tickets done; going on with ticket 4" in output, output
shutil.rmtree(directory)
print("  2 of 3 done: the task goes on with ticket 4")

print("a trial that fails for good does not stop the task:")
directory = experiment()
with open(os.path.join(directory, "exit-2"), "w") as f:
    f.write("3")
output = launch(directory, 0, 3)  # the task's status: the failed ticket's
assert states(directory) == {0: "completed", 2: "failed", 4: "completed"}, states(directory)
assert progress(directory, 0)["done"] == [0, 2, 4]
print("  trial 2 failed, trial 4 ran; the task exits 3")
shutil.rmtree(directory)
print("dlx-launch failing on a ticket (not the trainer) stops the task and names what it left:")
directory = experiment()
os.makedirs(os.path.join(directory, "trials"), exist_ok=True)
with open(os.path.join(directory, "trials", "2"), "w") as f:
    f.write("not a trial directory\n")  # where trial 2's directory goes
output = launch(directory, 0, 1)
assert "dlx-launch: task 0: ticket 2: " in output, output
assert ("(the task stops: its ticket 4 did not run; once this is fixed, `scontrol requeue` of the task runs them "
        "and skips the ones it finished)") in output, output
assert [r["trial"] for r in runs(directory)] == [0], runs(directory)
assert progress(directory, 0)["done"] == [0]
os.remove(os.path.join(directory, "trials", "2"))
output = launch(directory, 0, 0)  # the requeue, once fixed
assert "dlx-launch: task 0: 1 of its 3 tickets done; going on with ticket 2" in output, output
assert states(directory) == {0: "completed", 2: "completed", 4: "completed"}, states(directory)
print("  " + next(line for line in output.splitlines() if "going on" in line))
shutil.rmtree(directory)
print("ok")
