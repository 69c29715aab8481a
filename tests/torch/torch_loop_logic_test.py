# SPDX-License-Identifier: Apache-2.0
"""The pure logic under dlx.torch.Loop, table-driven: the length a point of training is labelled
with in each searcher unit (python/dlx/torch/_progress.py), the records of a batch, when the
searcher's target is reached; the hyperparameter name check (python/dlx/hparams.py) that warns
about a name read with a default the experiment lacks and a defined name never read, with
did-you-means; the seeds of samples loaded in DataLoader workers (python/dlx/torch/_samples.py);
and the docs' promise: docs/quickstart.md shows the real diff between
examples/pytorch/mnist_plain.py and mnist.py, five lines added besides the hyperparameter reads.
No trial. Needs PYTHONPATH (python/) and Debian's torch."""
import copy
import difflib
import os
import pickle
import random
import unittest
import warnings

import numpy
import torch

from dlx.hparams import Hparams, NameCheck, closest_name
from dlx.torch._progress import Position, Unit, batch_records, unit_of
from dlx.torch._samples import SeededBatches, SeededSamples, sample_seed
from dlx.torch._steps import StepWatch


def train(position, unit, records, target=0, batches=1):
    labels = [position.train_batch(unit, records, target) for _ in range(batches)]
    return labels


class NoisySamples:
    """A dataset whose samples draw from the process's torch, random and numpy generators."""
    opened = None

    def __len__(self):
        return 5

    def __getitem__(self, index):
        return index, float(torch.rand(())), random.random(), float(numpy.random.rand())


class SampleSeedTest(unittest.TestCase):
    """_samples.py: a sample's seed is its place in the rank's epoch; skipped batches keep theirs."""

    def batches(self, skip=0, rank=0, epoch=0, epoch_seed=7):
        restarts = []
        seeded = SeededBatches([[3, 1], [0, 2], [4]], rank, lambda: restarts.append(1))
        seeded.epoch_seed, seeded.epoch, seeded.skip = epoch_seed, epoch, skip
        return list(seeded), len(seeded), restarts

    def test_skipped_batches_keep_the_later_seeds(self):
        whole, length, restarts = self.batches()
        self.assertEqual([[i for _, i in b] for b in whole], [[3, 1], [0, 2], [4]])
        self.assertEqual((length, restarts), (3, [1]))  # the generators set back once an epoch
        resumed, length, _ = self.batches(skip=2)
        self.assertEqual((resumed, length), (whole[2:], 1))
        self.assertEqual(whole[1][0][0], sample_seed(7, 0, 0, 2))  # place 2 of the epoch

    def test_seeds_differ_by_place_rank_epoch_and_epoch_seed(self):
        seeds = [s for b in self.batches()[0] for s, _ in b]
        self.assertEqual(len(set(seeds)), 5)
        for other in (dict(rank=1), dict(epoch=1), dict(epoch_seed=8)):
            others = [s for b in self.batches(**other)[0] for s, _ in b]
            self.assertFalse(set(seeds) & set(others), other)
        self.assertTrue(all(0 <= s < 2**64 for s in seeds))

    def test_samples_seeded_then_loaded(self):
        samples = SeededSamples(NoisySamples())
        first, again = samples[(11, 3)], samples[(11, 3)]
        self.assertEqual(first, again)
        self.assertEqual(first[0], 3)
        self.assertNotEqual(samples[(12, 3)][1:], first[1:])
        self.assertEqual(len(samples), 5)
        samples.opened = "a file"  # a worker_init_fn's attribute reaches the dataset
        self.assertEqual((samples.dataset.opened, samples.opened), ("a file", "a file"))
        copied = pickle.loads(pickle.dumps(samples))  # as a spawned worker gets it
        self.assertEqual(copied[(11, 3)], first)
        self.assertEqual(copied.opened, "a file")
        with self.assertRaises(AttributeError):
            samples.missing


class UnitTest(unittest.TestCase):
    def test_unit_of(self):
        self.assertIs(unit_of(None), Unit.BATCHES)
        self.assertIs(unit_of(""), Unit.BATCHES)  # a bare max_length counts batches
        for text in ("batches", "records", "epochs"):
            self.assertIs(unit_of(text), Unit(text))
        with self.assertRaises(ValueError) as raised:
            unit_of("steps")
        self.assertEqual(str(raised.exception),
                         "DLX_LENGTH_UNIT is 'steps', not batches, records or epochs (dlx-launch "
                         "sets it from the experiment's searcher)")


class BatchRecordsTest(unittest.TestCase):
    def test_table(self):
        # (batch index, batch size, samples per rank, drop_last) -> records on one rank
        for index, size, samples, drop_last, want in [
                (0, 16, 100, False, 16), (5, 16, 100, False, 16), (6, 16, 100, False, 4),
                (6, 16, 100, True, 16), (0, 16, None, False, 16), (7, 16, 100, False, 0),
                (0, 32, 20, False, 20)]:
            with self.subTest(index=index, size=size, samples=samples, drop_last=drop_last):
                self.assertEqual(batch_records(index, size, samples, drop_last), want)


class PositionTest(unittest.TestCase):
    def test_batches_label_counts_batches(self):
        p = Position()
        self.assertEqual(train(p, Unit.BATCHES, 32, batches=3), [1, 2, 3])
        self.assertEqual((p.epoch, p.batch, p.batches, p.records), (0, 3, 3, 96))
        self.assertEqual(p.end_epoch(Unit.BATCHES), 3)  # an epoch's end keeps the last label
        self.assertEqual((p.epoch, p.batch, p.label), (1, 0, 3))
        self.assertEqual(train(p, Unit.BATCHES, 32), [4])

    def test_records_label_counts_records_and_lands_on_the_target(self):
        p = Position()
        # 64 records a batch, target 150: the batch that reaches it (128 -> 192) is labelled 150.
        self.assertEqual(train(p, Unit.RECORDS, 64, target=150, batches=4), [64, 128, 150, 256])
        self.assertEqual(p.records, 256)
        self.assertTrue(Position({"label": 150}).reached(Unit.RECORDS, 150))
        self.assertFalse(Position({"label": 128}).reached(Unit.RECORDS, 150))
        # A target on a batch's edge: that batch's own count.
        q = Position()
        self.assertEqual(train(q, Unit.RECORDS, 50, target=100, batches=3), [50, 100, 150])

    def test_epochs_label_is_the_epoch_in_progress(self):
        p = Position()
        self.assertEqual(train(p, Unit.EPOCHS, 10, batches=3), [1, 1, 1])
        self.assertFalse(p.reached(Unit.EPOCHS, 1))  # only whole epochs reach a length
        self.assertEqual(p.end_epoch(Unit.EPOCHS), 1)
        self.assertTrue(p.reached(Unit.EPOCHS, 1))
        self.assertFalse(p.reached(Unit.EPOCHS, 2))
        self.assertEqual(train(p, Unit.EPOCHS, 10), [2])

    def test_no_target_is_never_reached(self):
        for unit in Unit:
            p = Position({"epoch": 5, "label": 500})
            self.assertFalse(p.reached(unit, 0))

    def test_state_round_trips_as_a_plain_dict(self):
        p = Position()
        train(p, Unit.RECORDS, 8, batches=2)
        p.set(pending={"accuracy": 0.5})
        again = Position(dict(p.state))
        self.assertEqual(again.state, p.state)
        with self.assertRaises(KeyError):
            p.set(steps=3)

    def test_a_state_saved_before_stop_existed_is_not_stopped(self):
        # A checkpoint of a dlx without loop.stop() holds the required fields only; the loop
        # restores them in place into its dict, which then lacks "stopped".
        p = Position()
        old = {key: value for key, value in p.state.items() if key != "stopped"}
        p.state.clear()
        p.state.update(old)
        self.assertFalse(p.stopped)
        p.set(stopped=True)
        self.assertTrue(Position(dict(p.state)).stopped)


class NameCheckTest(unittest.TestCase):
    def setUp(self):
        self.said = []
        self.check = NameCheck(["batch_sise", "optim.lr", "optim.momentum", "epochs"],
                               self.said.append)
        self.hparams = Hparams({"batch_sise": 32, "optim": {"lr": 0.1, "momentum": 0.9},
                                "epochs": 3}, check=self.check)

    def test_typo_in_the_experiment_is_named_both_ways(self):
        self.assertEqual(self.hparams.get("batch_size", 64), 64)
        self.assertEqual(self.said, [
            "dlx: warning: hyperparameter 'batch_size' is not defined by the experiment, so "
            "hparams.get(\"batch_size\", ...) uses its default 64 (did you mean 'batch_sise'? the "
            "experiment defines: batch_sise, optim.lr, optim.momentum, epochs)"])
        self.assertEqual(self.hparams["epochs"], 3)
        self.assertEqual(self.hparams["optim.lr"], 0.1)  # one member: the other stays unread
        self.check.check_unread()
        self.assertEqual(self.said[1:], [
            "dlx: warning: the experiment defines hyperparameter 'batch_sise', which this trial "
            "has not read: did you mean 'batch_size', which it asked for and got the default 64?",
            "dlx: warning: the experiment defines hyperparameter 'optim.momentum', which this "
            "trial has not read (remove it from the experiment, or read it: "
            "trial.hparam(\"optim.momentum\"))"])
        self.check.check_unread()  # each warning once
        self.assertEqual(len(self.said), 3)
        self.assertEqual(self.check.warnings, self.said)

    def test_a_trainer_that_reads_no_name_through_dlx_is_not_warned(self):
        # It reads DLX_HP_<NAME> or DLX_HPARAMS, which dlx cannot see: no warning about each name.
        self.check.check_unread()
        self.assertEqual(self.said, [])
        self.hparams.get("epochs")  # one name read through dlx: the others are now unread
        self.check.check_unread()
        self.assertEqual(len(self.said), 3)
        self.assertIn("'batch_sise', which this trial has not read", self.said[0])

    def test_reading_a_group_reads_its_members(self):
        group = self.hparams.get("optim")  # the trainer may use any member of a group it reads
        self.assertEqual(group.get("lr", 1.0), 0.1)
        self.assertEqual(group.get("beta", 2.0), 2.0)  # a member missing from a group
        self.assertEqual(self.said, [
            "dlx: warning: hyperparameter 'optim.beta' is not defined by the experiment, so "
            "hparams.get(\"optim.beta\", ...) uses its default 2.0 (the experiment defines: "
            "batch_sise, optim.lr, optim.momentum, epochs)"])
        self.said.clear()
        self.hparams.get("batch_sise")
        self.hparams.get("epochs")
        self.check.check_unread()
        self.assertEqual(self.said, [])

    def test_a_probe_without_a_default_is_no_warning(self):
        self.assertIsNone(self.hparams.get("dropout"))
        self.assertNotIn("dropout", self.hparams)
        self.assertEqual(self.said, [])

    def test_closest_name(self):
        for name, candidates, want in [("batch_size", ["batch_sise", "lr"], "batch_sise"),
                                       ("momentum", ["momentun"], "momentun"),
                                       ("lr", ["learning_rate"], None),
                                       ("dropout", [], None)]:
            with self.subTest(name=name):
                self.assertEqual(closest_name(name, candidates), want)

    def test_without_a_check_it_is_a_plain_nested_dict(self):
        plain = Hparams({"optim": {"lr": 0.1}})
        self.assertEqual(plain.get("optim.beta", 3), 3)
        self.assertEqual(plain, {"optim": {"lr": 0.1}})


def sgd():
    weight = torch.nn.Parameter(torch.ones(2))
    return weight, torch.optim.SGD([weight], lr=0.5)


def train_step(weight, optimizer, step=True):
    weight.sum().backward()
    if step:
        optimizer.step()
        optimizer.zero_grad()


class StepWatchTest(unittest.TestCase):
    """python/dlx/torch/_steps.py with real optimizers and LR schedulers."""

    def test_settled_only_after_a_batch_that_steps(self):
        weight, optimizer = sgd()
        watch = StepWatch([optimizer, optimizer])  # watched once
        self.assertTrue(watch.settled())  # nothing trained since the run began
        # (steps this batch?) -> settled after it: an accumulation of 3 batches
        for stepped in (False, False, True, False, True):
            watch.batch_started()
            train_step(weight, optimizer, stepped)
            self.assertEqual(watch.settled(), stepped)
        self.assertEqual(watch.steps, 2)
        # A step after the epoch's last batch (the script's leftover group) settles its end.
        watch.batch_started()
        train_step(weight, optimizer, False)
        self.assertFalse(watch.settled())
        optimizer.step()
        self.assertTrue(watch.settled())

    def test_without_optimizers_every_point_is_settled(self):
        watch = StepWatch([])
        watch.batch_started()
        self.assertFalse(watch.watching)
        self.assertTrue(watch.settled())

    def test_an_epoch_without_a_step_ends_the_watch(self):
        weight, optimizer = sgd()
        watch = StepWatch([optimizer])
        watch.epoch_started(at_first_batch=False)  # resumed inside an epoch: not a whole one
        for _ in range(3):
            watch.batch_started()
            train_step(weight, optimizer, False)
        watch.epoch_ended()
        self.assertFalse(watch.settled())
        watch.epoch_started(at_first_batch=True)
        for _ in range(3):
            watch.batch_started()
            train_step(weight, optimizer, False)
        watch.epoch_ended()
        self.assertFalse(watch.watching)
        self.assertTrue(watch.settled())

    def test_schedulers_made_before_or_after_still_count_and_warn_nothing(self):
        for order in ("scheduler first", "loop first"):
            with self.subTest(order=order), warnings.catch_warnings(record=True) as said:
                warnings.simplefilter("always")
                weight, optimizer = sgd()
                if order == "scheduler first":
                    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
                    watch = StepWatch([optimizer])
                else:
                    watch = StepWatch([optimizer])
                    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
                for _ in range(2):
                    watch.batch_started()
                    train_step(weight, optimizer)
                    scheduler.step()
                self.assertEqual(watch.steps, 2)
                self.assertEqual(optimizer.param_groups[0]["lr"], 0.125)
                # The parameters moved by lr 0.5 then 0.25 (the gradient of a sum is 1).
                self.assertEqual(weight.tolist(), [0.25, 0.25])
                self.assertEqual([str(w.message) for w in said], [])

    def test_a_deep_copy_steps_its_own_parameters(self):
        weight, optimizer = sgd()
        watch = StepWatch([optimizer])
        twin = copy.deepcopy(optimizer)
        twin_weight = twin.param_groups[0]["params"][0]
        twin_weight.grad = torch.ones(2)
        twin.step()
        self.assertEqual(twin_weight.tolist(), [0.5, 0.5])
        self.assertEqual(weight.tolist(), [1.0, 1.0])
        self.assertEqual(watch.steps, 0)  # a copy is not the loop's optimizer (its state drops the wrapper)


SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def code_of(path):
    """A script's lines below its module docstring."""
    with open(path) as f:
        text = f.read()
    end = text.index('"""', text.index('"""') + 3) + 3
    return text[end:].lstrip("\n").splitlines(keepends=True)


class DocumentedDiffTest(unittest.TestCase):
    def test_quickstart_shows_the_real_diff_of_five_lines(self):
        examples = os.path.join(SOURCE, "examples", "pytorch")
        diff = "".join(difflib.unified_diff(code_of(os.path.join(examples, "mnist_plain.py")),
                                            code_of(os.path.join(examples, "mnist.py")),
                                            "mnist_plain.py", "mnist.py", n=1))
        with open(os.path.join(SOURCE, "docs", "quickstart.md")) as f:
            doc = f.read()
        start = doc.index("```diff\n") + len("```diff\n")
        self.assertEqual(doc[start:doc.index("```\n", start)], diff)
        added = [line for line in diff.splitlines()
                 if line.startswith("+") and not line.startswith("+++")]
        reads = [line for line in added if "trial.hparam(" in line or "dlx.Trial()" in line]
        self.assertEqual(len(reads), 4, reads)  # trial = dlx.Trial() and three reads
        self.assertEqual(len(added) - len(reads), 5, added)


if __name__ == "__main__":
    unittest.main(verbosity=2)
