# SPDX-License-Identifier: Apache-2.0
"""dlx.torch.Loop: the epochs-and-DataLoader training loop of an ordinary PyTorch script, made
resumable and searchable without rewriting it.

    loop = dlx.torch.Loop(trial, train_loader, model, optimizer, scheduler)
    for epoch in loop.epochs(args.epochs, validate=lambda: test(model, device, test_loader)):
        train(args, model, device, loop, optimizer, epoch)    # iterates `loop` for its batches
        scheduler.step()

The loop owns what a requeue or a searcher needs and the script does not keep: the global step,
the epoch and the position in it, the DataLoader's order (_feed.py), the length the searcher counts
(_progress.py), when to save, where validation goes and what the searcher says.

Between two batches (when the script asks for the next one), first the validation every
`validate_every_batches` batches, if one is due (before a notice is taken, so that a run
requeued there has validated there as the uninterrupted one has); then every rank agrees, with
one all_reduce, on whether a checkpoint signal came, whether the experiment's checkpoint.period
is due and whether every rank stands after an optimizer step (below); then, in this order:
  - a checkpoint signal: save this point, exit 85 (Slurm requeues the trial, which resumes at the
    next batch). With lengths in epochs only whole epochs are saved: the trial exits back to the
    last epoch's end (saved at every epoch end) and trains this epoch again.
  - the searcher's target reached inside an epoch: validate, save, ask the searcher; "train"
    goes on with the next batch of the same epoch (the script sees nothing), anything else ends
    the epoch's batches and the loop.
  - the period due: save.
What falls on an epoch's last batch waits for the epoch's end, after the script's own end-of-epoch
code (scheduler.step()) has run: a checkpoint signal first (save, exit 85: the requeued trial
does the epoch's end at once, without running its body again), then validation (every
`validate_every` epochs, on the `validate_every_batches` period, at the searcher's target and at
the last epoch), the searcher's question at its target, and the checkpoint (due, requested, or
at every epoch end when the searcher counts epochs). So a checkpoint holds a point between two
batches, an epoch's end before its end's work, or a whole epoch's end, and a resumed run does
exactly what the uninterrupted one did from there; the validation row of an epoch is reported once.

A point between two batches (or an epoch's end) is saved only where the optimizers stepped since
the last batch was handed out (_steps.py: a script that accumulates gradients has part of a
group's gradient in .grad between two steps): a signal or a period that comes between two steps
waits for the next batch that steps. The searcher's targets, and epochs' ends with lengths in
epochs, cannot wait: the log says when one falls between two steps.

A look at the first batch an iteration hands out (`next(iter(loop))`, the batch size as PyTorch's
DDP tutorial reads it) is undone when the epoch then iterates the loop (_undo_peek). Outside
epochs() and in validate(), the loop is its loader: batches counted nowhere, the order untouched.
"""
from __future__ import annotations

import dis
import os
import sys
import warnings
from types import FrameType
from typing import Any, Callable, Iterable, Iterator, Mapping, NamedTuple

import torch

from .._exit import leave
from .._library import ConfigError
from ..trial import Trial
from . import _ranks
from ._feed import Feed
from ._progress import Position, Unit, unit_of
from ._signals import workers_deaf
from ._steps import StepWatch

STATE_NAME = "dlx_loop"  # the loop's position among the checkpoint's objects
# Said with an unknown attribute that looks like a way to report metrics (loop.report(...)).
METRICS_HINT = ("; metrics go through the trial: trial.report_training(loop.step, loss=...) in the batch "
                "loop, and validation metrics are what validate() returns")

Metrics = Mapping[str, float]


class Agreement(NamedTuple):
    requested: bool  # a rank got a checkpoint signal
    due: bool        # a checkpoint is due on a rank
    settled: bool    # every rank stands after an optimizer step
    stop_now: bool   # a rank called loop.stop(now=True)


def _agree(trial: Trial, due: bool, settled: bool, stop_now: bool = False) -> Agreement:
    """What the ranks agree on between two batches and at an epoch's end, the same on every
    rank: one all_reduce of MAX over the signal and the flags."""
    signal_number, due_anywhere, unsettled_anywhere, stop_anywhere = _ranks.max_over_ranks(
        [trial.checkpoint_signal(), int(due), int(not settled), int(stop_now)], trial.size,
        "dlx.torch.Loop", "before the first epoch")
    return Agreement(_ranks.take_notice(trial, signal_number), bool(due_anywhere),
                     not unsettled_anywhere, bool(stop_anywhere))


# Where a frame stands when it drops the generator of loop.epochs() without an exception.
_LEAVING_OPCODES = frozenset(dis.opmap[name] for name in ("POP_TOP", "RETURN_VALUE", "RETURN_CONST")
                             if name in dis.opmap)


def _how_the_script_left(caller: FrameType | None) -> str | None:
    """How the script's `for epoch in loop.epochs()` ended, from the frame that closed the
    generator, where it stands at that moment: at the POP_TOP that drops the loop's iterator (a
    break or a return), or at the return of a frame that held the generator in a variable:
    "break"; at the instruction that raised, while an exception unwinds the frame: "exception"
    (Python holds that exception aside while the generator closes, so sys.exc_info() cannot tell
    it). None when no frame closed it (the interpreter's shutdown)."""
    if caller is None:
        return None
    code = caller.f_code.co_code
    if not 0 <= caller.f_lasti < len(code):
        return None
    return "break" if code[caller.f_lasti] in _LEAVING_OPCODES else "exception"


class Loop:
    """A trial's training loop over `loader` (a DataLoader, or any iterable of batches).

    model, optimizer and scheduler (each optional), and `state` (more objects by name: a
    GradScaler, an EMA model, a dict of counters) are what a checkpoint holds, as
    dlx.torch.save_state saves them. `metric` is the validation metric saved with the
    checkpoints for keep_best (default: the experiment's searcher metric, DLX_SEARCHER_METRIC).

    Iterate `for epoch in loop.epochs(...)`, and inside it the loop itself for the epoch's
    batches; the loop also answers len() and the loader's attributes (loop.dataset)."""

    def __init__(self, trial: Trial, loader: Iterable, model: torch.nn.Module | None = None,
                 optimizer: torch.optim.Optimizer | None = None, scheduler: Any = None, *,
                 state: Mapping[str, Any] | None = None, metric: str | None = None):
        self.trial = trial
        self.loader = loader
        self.objects: dict[str, Any] = {name: value for name, value in
                                        (("model", model), ("optimizer", optimizer),
                                         ("scheduler", scheduler)) if value is not None}
        for name, value in (state or {}).items():
            if name in self.objects or name == STATE_NAME:
                raise ConfigError(f"dlx.torch.Loop: state names {name!r}, which the loop already "
                                  f"saves; give it another name")
            self.objects[name] = value
        self.position = Position()
        # After the script's own seeding, before a resume restores the generator (whose state
        # holds the saved run's seed): _check_seeded.
        self._torch_seed = torch.initial_seed()
        self.position.set(torch_seed=self._torch_seed)
        self.unit: Unit = unit_of(os.environ.get("DLX_LENGTH_UNIT"))
        self.metric = metric or os.environ.get("DLX_SEARCHER_METRIC") or None
        self.started_from: str | None = None  # another trial's checkpoint this one started from
        self._feed = Feed(loader, trial.rank, trial.size)
        self._batches_per_epoch = self._feed.batches_per_epoch()
        self._resumed: bool | None = None     # None: resume() not called yet
        self._saved_label: int | None = None  # the label of this run's last save (or the resume)
        self._saved_ended = False  # ... taken after an epoch's batches, before its end's work
        self._due_at_epoch_end = False
        self._in_epoch = False       # the script is iterating this epoch's batches
        self._iterated = False       # it did in this epoch
        self._finished = False       # the searcher ended the trial (or the last epoch is done)
        self._in_epochs = False      # epochs() has begun and not ended
        self._leaving = False        # exiting for a requeue: not the script leaving the loop
        self._at_epoch_end = False   # validate() runs for the epoch that just ended
        self._stop_now = False       # loop.stop(now=True): this epoch's batches end (agreed)
        self._exit_at_epoch_end = False  # a checkpoint request on the epoch's last batch (agreed)
        self._validating = False     # validate() is running
        self._peeked: tuple[dict, int | None] | None = None  # a look at a batch to undo: __iter__
        self._validate: Callable[[], Metrics | None] | None = None
        self._validate_every = 1
        self._validate_every_batches: int | None = None
        # Checkpoints between two batches follow an optimizer step (gradient accumulation:
        # _steps.py); a save the period asked for between two steps is owed until the next.
        self._steps = StepWatch(value for value in self.objects.values()
                                if isinstance(value, torch.optim.Optimizer))
        self._save_owed = False
        self._said: set[str] = set()  # the notes on unsettled points already printed
        self._tell_own_counts = True  # a mid-epoch resume says a script's own batch count restarts

    # ---- what the script reads

    @property
    def step(self) -> int:
        """The length the training so far counts as, in the searcher's unit (batches, records
        or epochs; docs/sdk.md): inside the batch loop, the batch being trained included. The
        step of trial.report_training(loop.step, ...)."""
        return self.position.label

    @property
    def epoch(self) -> int:
        """The epoch in progress, from 1 (as loop.epochs() yields it); in validate() at an
        epoch's end, the epoch being validated."""
        return self.position.epoch + (0 if self._at_epoch_end else 1)

    @property
    def batch(self) -> int:
        """Batches of this epoch trained, the one in progress included (from 1)."""
        return self.position.batch

    def __len__(self) -> int:
        if self._batches_per_epoch is None:
            raise TypeError(f"{type(self.loader).__name__} has no len()")
        return self._batches_per_epoch

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name == "loader":
            raise AttributeError(name)
        try:
            return getattr(self.loader, name)  # loop.dataset, loop.batch_size, loop.sampler, ...
        except AttributeError:
            pass
        # Named as the loop, not as the loader the user never called; name and obj give Python's
        # own "Did you mean" from the loop's attributes.
        hint = METRICS_HINT if "report" in name or "log" in name else ""
        raise AttributeError(f"dlx.torch.Loop has no attribute {name!r}, nor has the "
                             f"{type(self.loader).__name__} it wraps{hint}", name=name, obj=self) from None

    def stop(self, *, now: bool = False) -> None:
        """Ends training after this epoch: its end runs as the last epoch's does (validation,
        the report, the final checkpoint) and the trial completes, before the searcher's length
        if it has one (the searcher is told so). Call it inside `for epoch in loop.epochs()`: in
        the epoch's body or in validate() (the epoch being validated is then the last). The ranks
        agree at the epoch's end (one of them calling it is enough). `now=True`, in the batch
        loop: the epoch's batches end after this one, on every rank (a `break` on one rank would
        leave the others in their collectives). A `break` out of loop.epochs() does not finish
        the trial: call this instead."""
        if not self._in_epochs:
            raise ConfigError("dlx.torch.Loop: loop.stop() was called outside `for epoch in "
                              "loop.epochs()`: call it in an epoch's body or in validate(), and "
                              "that epoch is the last")
        self.position.set(stopped=True)  # saved: a requeued run ends after this epoch too
        self._stop_now = self._stop_now or now

    def _stop_agreed(self) -> bool:
        """Whether any rank called stop(), the same on every rank (a MAX all_reduce)."""
        (stop,) = _ranks.max_over_ranks([int(self.position.stopped)], self.trial.size,
                                        "dlx.torch.Loop", "before the first epoch")
        self.position.set(stopped=bool(stop))
        return bool(stop)

    # ---- checkpoints

    def _objects(self) -> dict[str, Any]:
        return {**self.objects, STATE_NAME: self.position.state}

    def resume(self) -> int | None:
        """Restores the objects, the loop's position and every rank's RNG and DataLoader
        generators from the checkpoint the trial resumes from; returns its step (None on a
        fresh start). epochs() calls it when the script has not; call it first to change what
        was loaded (a PBT exploit's optimizer holds its parent's learning rate: see
        `started_from`). Collective."""
        from . import _load_state, _save_state

        if self._resumed is not None:
            return self.position.label if self._resumed else None
        loaded = _load_state(self.trial, self._objects(), restore_rng=True)
        self._resumed = loaded is not None
        if loaded is None:
            if self.unit is Unit.EPOCHS and self.trial.checkpoint_dir is not None:
                # Whole epochs only: a requeue in the first epoch goes back to this start.
                _save_state(self.trial, 0, self._objects(), None, 0, self._feed.streams(False))
                self._saved_label = 0
            return None
        self._feed.restore(loaded.rank_streams)
        self._saved_label = loaded.step
        self._saved_ended = bool(self.position.state.get("ended"))  # checked below
        if self.position.batches:
            # Resumed at an epoch's end, the script's scheduler.step() comes before this
            # process's first optimizer.step(), which PyTorch takes for a wrong order; the order
            # was right in the run that trained those batches.
            warnings.filterwarnings("ignore", message=r"Detected call of `lr_scheduler\.step\(\)` "
                                                      r"before `optimizer\.step\(\)`")
        if loaded.other_trial:
            self.started_from = loaded.path
        missing = [name for name in Position.FIELDS if name not in self.position.state]
        if missing or self.position.label != loaded.step:
            what = f"lacks {', '.join(missing)}" if missing else \
                f"is {self.position.label}"
            raise ConfigError(f"dlx.torch.Loop: {loaded.path} is step {loaded.step} but its loop "
                              f"position {what}: was it saved by another program?")
        self._say_resumed_inside_epoch()
        self._check_seeded(loaded)
        return loaded.step

    def _check_seeded(self, loaded) -> None:
        """A script that does not seed torch's global generator draws other numbers before the
        loop in every run (Python's torch seeds it from the OS): the checkpoint brings back the
        model, the optimizer and the generators' states, but not what the script drew before the
        loop and kept elsewhere (a random_split of the data, a target, a fixed noise), so the
        resumed trial goes on with other ones, silently. Each checkpoint holds the initial seed of
        the run that saved it; this run's differs exactly when the script did not seed (or seeded
        from the clock). Rank 0, this trial's own checkpoints only (a PBT parent is another trial)."""
        then, now = self.position.state.get("torch_seed"), self._torch_seed
        self.position.set(torch_seed=now)  # this run's saves hold its own
        if then is None or then == now or loaded.other_trial or self.trial.rank != 0:
            return
        print(f"dlx.torch.Loop: warning: torch's global generator was not seeded as in the run that "
              f"saved {os.path.basename(str(loaded.path))} (its initial seed was {then}, this run's is "
              f"{now}): what the script drew before the loop and keeps outside the checkpoint (a "
              f"random_split of the data, a target, a fixed noise) differs from that run's, and the "
              f"resumed training goes on with it; call torch.manual_seed(...) (and random.seed, "
              f"numpy.random.seed where the script draws from them) at the top of the script",
              file=sys.stderr, flush=True)

    def _say_resumed_inside_epoch(self) -> None:
        """A run resumed between two batches of an epoch: the loop skips the batches trained, but
        a count the script keeps itself (`for i, data in enumerate(loop)`, the usual idiom)
        starts from 0 again. Where that count decides what runs (PyTorch's DCGAN example runs its
        generator on a fixed noise every 100 batches, which updates BatchNorm's running
        statistics), the resumed run does what the uninterrupted one did not, silently."""
        position = self.position
        if not position.batch or position.ended or self.trial.rank != 0 or not self._tell_own_counts:
            return
        of = f" of {self._batches_per_epoch}" if self._batches_per_epoch is not None else ""
        print(f"dlx.torch.Loop: resuming inside epoch {position.epoch + 1}, after its batch "
              f"{position.batch}{of}: a count of the script's own (enumerate(loop), i += 1) starts "
              f"from 0 here, where the uninterrupted run was at {position.batch}; where such a count "
              f"decides what runs (every N batches: a log line is harmless, a forward pass through "
              f"BatchNorm or a random draw is not), count with loop.batch (the batch in progress, "
              f"from 1, the same in a resumed epoch)", file=sys.stderr, flush=True)

    def _save(self, metric: float | None = None, *, at_target: bool = False) -> None:
        from . import _save_state

        label = self.position.label
        if self.trial.checkpoint_dir is None:  # by hand, outside a trial: no checkpoints
            return
        # The checkpoint's epoch is the one this point is in, from 1, as the loop numbers them
        # (at an epoch's end, that epoch; 0 before the first): the resume line ("dlx: resuming
        # from ... (step 23, epoch 2)") then names the epoch the loop's own line does.
        position = self.position
        epoch = position.epoch + (1 if position.batch or position.ended else 0)
        _save_state(self.trial, label, self._objects(), metric, epoch,
                    self._feed.streams(position.ended), at_target=at_target)
        self._saved_label = label
        self._saved_ended = bool(self.position.ended)
        self._save_owed = False

    def _saved_here(self) -> bool:
        """Whether this run's last save (or its resume) holds this very point: the same label
        and the same side of the epoch's end (a save on an epoch's last batch, taken before the
        end's work, scheduler.step() included, keeps the label in batches and records)."""
        return self._saved_label == self.position.label and self._saved_ended == bool(self.position.ended)

    def _save_if_settled(self, settled: bool) -> None:
        """A save the period asks for: here when the ranks stand after an optimizer step, else
        owed to the next point that does."""
        if self._saved_here():
            self._save_owed = False
        elif settled:
            self._save()
        else:
            self._save_owed = True

    def _say_once(self, key: str, text: str) -> None:
        if key not in self._said and self.trial.rank == 0:
            print(f"dlx.torch.Loop: {text}", file=sys.stderr, flush=True)
        self._said.add(key)

    def _say_deferred(self) -> None:
        self._say_once("deferred", f"checkpoint requested at step {self.position.label}, between two "
                                   f"optimizer steps: it is taken after the next batch that steps "
                                   f"the optimizer, where a resumed run goes on as this one would "
                                   f"(docs/sdk.md, \"Gradient accumulation\")")

    def _say_unsettled(self, where: str) -> None:
        self._say_once(where, f"{where} fell between two optimizer steps (gradient accumulation?): "
                              f"its checkpoint holds none of the gradients accumulated since the "
                              f"last step, so a trial resumed from it does not train as one that "
                              f"went on. Step the optimizer on each epoch's last batch too, and "
                              f"give the searcher's lengths (max_length, PBT's length_per_round) "
                              f"in multiples of the batches per optimizer step (docs/sdk.md, "
                              f"\"Gradient accumulation\")")

    def _exit_for_requeue(self) -> None:
        """Saves (unless this point is saved), exits 85 on every rank: Slurm requeues the trial."""
        position = self.position
        if self.unit is Unit.EPOCHS and (position.batch or position.ended):
            label = self._saved_label  # whole epochs only: back to the last epoch's end
            where = (f"the end of epoch {label}" if label else "the start of training") + \
                ": this epoch is trained again"
        else:
            if not self._saved_here():
                self._save()
            label = position.label
            where = f"step {label}" + (f", the end of epoch {position.epoch + 1} (its validation "
                                       f"and checkpoint run then)" if position.ended else "")
        if self.trial.rank == 0:
            print(f"dlx.torch.Loop: checkpoint requested: the requeued trial resumes at {where}",
                  file=sys.stderr, flush=True)
        self._leaving = True
        code = self.trial.checkpoint_and_exit(label)
        self._feed.close(final=True)
        self.trial.close()
        leave(code)  # os._exit with a process group (torch 1.13's exit: docs/sdk.md)

    # ---- validation and the searcher

    def _validated(self) -> Metrics:
        assert self._validate is not None
        # Validation switches the model to eval(); the epoch goes on training as it was (each
        # module as it was: a frozen BatchNorm stays in eval()).
        modes = [(module, module.training) for top in self._modules() for module in top.modules()]
        self._validating = True
        try:
            with workers_deaf():  # its DataLoaders' workers survive a notice; the loop takes it after
                metrics = self._validate()
        finally:
            self._validating = False
        for module, mode in modes:
            module.training = mode
        if metrics is None:
            return {}
        if not isinstance(metrics, Mapping):
            raise ConfigError(f"dlx.torch.Loop: validate() returned a {type(metrics).__name__}; "
                              f"return the metrics as a dict, e.g. {{\"loss\": 0.31, "
                              f"\"accuracy\": 0.92}} (the same on every rank)")
        return {str(name): float(value) for name, value in metrics.items()}

    def _modules(self) -> list[torch.nn.Module]:
        return [value for value in self.objects.values() if isinstance(value, torch.nn.Module)]

    def _metric_of(self, metrics: Metrics) -> float | None:
        if self.metric and self.metric in metrics:
            return metrics[self.metric]
        return None

    def _ask(self, metrics: Metrics) -> None:
        """At the searcher's target: save with the metrics pending, report, and follow the
        answer. A run resumed from that save reports the same metrics without validating."""
        if not self._steps.settled():  # the searcher's length is where it is: say it
            self._say_unsettled(f"the searcher's target, step {self.position.label},")
        if not metrics:
            raise ConfigError(f"dlx.torch.Loop: validate() returned no metrics at the searcher's "
                              f"target (step {self.position.label}), where the searcher needs them: "
                              f"return a dict{' with ' + repr(self.metric) if self.metric else ''}")
        self.position.set(pending=dict(metrics))
        self._save(self._metric_of(metrics), at_target=True)  # copied before the searcher names it
        self._report(metrics)

    def _report(self, metrics: Metrics) -> None:
        decision = self.trial.report_validation(self.position.label, metrics)
        self.position.set(pending=None)
        if decision != "train" or not self.trial.target_length:
            self._finished = True

    def _settle_pending(self) -> None:
        """A run resumed from a save at the searcher's target that was not reported reports it."""
        pending = self.position.pending
        if pending and self.position.reached(self.unit, self.trial.target_length):
            self._report(pending)
        else:
            self.position.set(pending=None)

    # ---- the epochs

    def epochs(self, max_epochs: int | None = None, *,
               validate: Callable[[], Metrics | None] | None = None,
               validate_every: int | None = 1,
               validate_every_batches: int | None = None) -> Iterator[int]:
        """The epochs to train, numbered from 1 (as range(1, max_epochs + 1)), from the one the
        trial resumes in. With a searcher length (ASHA, PBT, max_length) the searcher decides
        when training ends; `max_epochs` is the length without one. `validate()` returns the
        validation metrics (a dict, the same on every rank); the loop calls it at the end of
        every `validate_every`-th epoch (None: at no epoch's end for that reason), after every
        `validate_every_batches`-th batch of the training (counted over epochs), at the
        searcher's targets and at the last epoch, and reports them. When the loop ends, the
        trial is finished (trial.finish())."""
        for name, value, unit in (("validate_every", validate_every, "epoch"),
                                  ("validate_every_batches", validate_every_batches, "batch")):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise ConfigError(f"dlx.torch.Loop: {name} is {value!r}; give 1 (every {unit}) or more")
        self._validate, self._validate_every = validate, validate_every
        self._validate_every_batches = validate_every_batches
        self.resume()
        self.trial.check_hparam_names()  # the script has read its hyperparameters by now
        if not self.trial.target_length and max_epochs is None:
            raise ConfigError("dlx.torch.Loop: this trial has no searcher length (max_length), so "
                              "the loop needs one: loop.epochs(max_epochs)")
        if self.trial.target_length and validate is None:
            raise ConfigError(f"dlx.torch.Loop: the searcher asks for validation metrics at length "
                              f"{self.trial.target_length}: give loop.epochs(..., validate=...) a "
                              f"function returning them (a dict with the searcher metric"
                              f"{' ' + repr(self.metric) if self.metric else ''})")
        self._settle_pending()
        self._in_epochs, self._peeked = True, None
        try:
            while not self._finished:
                if self.position.body_done:  # resumed where the epoch's body had run
                    self._resume_at_epoch_end()
                else:
                    if not self.position.batch and not self.position.ended and \
                            self._at_end(max_epochs):
                        self._finish_without_searcher()
                        break
                    self._iterated = False
                    yield self.position.epoch + 1
                self._end_epoch(max_epochs)
        except GeneratorExit:
            if not self._leaving:
                self._say_left_early(_how_the_script_left(sys._getframe(1)))
            raise
        finally:
            self._in_epochs = False
        self._feed.close(final=True)
        self.trial.finish()

    def _resume_at_epoch_end(self) -> None:
        """A trial requeued on an epoch's last batch was saved after the epoch's body, its batch
        loop and the code after it (the script's scheduler.step()): the resumed run goes on with
        the epoch's end, the generators set to their state after the epoch's batches."""
        self._feed.epoch(self.position.epoch, self.position.batch, ended=True)
        self._iterated = True

    def _say_left_early(self, how: str | None) -> None:
        """The script's `for epoch in loop.epochs()` ended before the loop did (the loop's own
        errors, and those of validate(), mark the loop as leaving first). Nothing collective
        here: said, not mended. An exception says nothing more: its traceback follows and says
        why; the advice below is for a break or a return (early stopping)."""
        if how == "exception" or self.trial.rank != 0 or self.trial.checkpoint_dir is None:
            return
        way = "by a break or a return" if how == "break" else "by a break, a return or an exception"
        print(f"dlx.torch.Loop: the script left `for epoch in loop.epochs()` in epoch "
              f"{self.position.epoch + 1} (step {self.position.label}) before the loop ended, "
              f"{way}: the trial is not finished (its record stays running), and this epoch's end "
              f"(validation, checkpoint) did not run. To end training early, call loop.stop() "
              f"in the epoch's body or in validate() instead of a break: that epoch is the "
              f"last, validated and saved, and the trial completes", file=sys.stderr, flush=True)

    def _at_end(self, max_epochs: int | None) -> bool:
        """Whether training ends here: loop.stop() (as the ranks agreed it), or `max_epochs`
        reached without a searcher length."""
        return self.position.stopped or (not self.trial.target_length and max_epochs is not None
                                         and self.position.epoch >= max_epochs)

    def _finish_without_searcher(self) -> None:
        """The last epoch's end without a searcher length: the final checkpoint (after the
        report: no searcher question needs it first)."""
        metrics = self.position.pending or {}
        if metrics:
            self.trial.report_validation(self.position.label, metrics)
        self.position.set(pending=None)
        if not self._saved_here():
            self._save(self._metric_of(metrics))

    def _end_epoch(self, max_epochs: int | None) -> None:
        position = self.position
        if self._finished:  # the searcher ended the trial inside the epoch
            return
        if not self._iterated and not position.ended:
            raise ConfigError(f"dlx.torch.Loop: epoch {position.epoch + 1} ended without training a "
                              f"batch: iterate the loop in the body of `for epoch in loop.epochs()` "
                              f"(for batch in loop: ...)")
        # Its batches ran out, or the script stopped iterating them (break): the epoch is over.
        # A look at one batch that no iteration followed was the epoch's training: it counts.
        self._in_epoch, self._peeked = False, None
        if self._exit_at_epoch_end:
            # Requested on the last batch: saved after the epoch's body, before its end, which
            # the requeued trial does at once (validation, the searcher, the checkpoint).
            position.set(ended=True, body_done=True)
            self._exit_for_requeue()
        self._steps.epoch_ended()
        self._feed.end_epoch()
        label = position.end_epoch(self.unit)
        target = self.trial.target_length
        at_target = position.reached(self.unit, target)
        self._stop_agreed()  # a stop() in the epoch's body makes this the last epoch
        last = self._at_end(max_epochs)
        metrics: Metrics = {}
        if self._validate is not None and (
                at_target or last or self._batch_period_due() or
                (self._validate_every is not None and position.epoch % self._validate_every == 0)):
            self._at_epoch_end = True
            try:
                metrics = self._validated()
            finally:
                self._at_epoch_end = False
            if not last:  # a stop() in validate(): the epoch validated is the last
                last = self._stop_agreed()
        if at_target:
            self._ask(metrics)
            if self._finished or last:
                return  # the report is done; epochs() finishes with the final save
        elif last:
            self.position.set(pending=dict(metrics) or None)
            return  # epochs() finishes: report, then the final save
        elif metrics:
            self.trial.report_validation(label, metrics)
        requested, due, settled, _ = _agree(
            self.trial, self._due_at_epoch_end or self._save_owed or self._minutes_due(),
            self._steps.settled())
        self._due_at_epoch_end = False
        if self.unit is Unit.EPOCHS:  # whole epochs only: this is the point to save
            if not settled:
                self._say_unsettled(f"the end of epoch {position.epoch}")
            settled = True
        if due or self.unit is Unit.EPOCHS:
            self._save_if_settled(settled)
        if requested:
            if settled:
                self._exit_for_requeue()
            self._say_deferred()

    def _batch_period_due(self) -> bool:
        every = self._validate_every_batches
        return every is not None and self.position.batches % every == 0

    def _minutes_due(self) -> bool:
        # A period in batches fell on a batch (and was kept for the epoch's end if it was the
        # last); in minutes only rank 0's clock says it.
        return self.trial.checkpoint_due(self.position.batches)

    # ---- one epoch's batches

    def __iter__(self) -> Iterator[Any]:
        if not self._in_epochs or self._validating:
            # A look at the data outside the training (before loop.epochs(), after it, in
            # validate()): the loader's own batches, counted nowhere, its order left as it was.
            yield from self._feed.outside()
            return
        if self._in_epoch:
            raise ConfigError("dlx.torch.Loop: the loop is already being iterated in this epoch "
                              "(an iterator of it kept open, or a loop over it inside another): "
                              "iterate it once per epoch; a look at one batch, next(iter(loop)), "
                              "is free where its iterator is not kept")
        position = self.position
        self._in_epoch, self._iterated = True, True
        self._undo_peek()
        first = True
        try:
            if position.pending is None and not position.ended and position.batch and \
                    position.reached(self.unit, self.trial.target_length):
                # Resumed from a requeue at the searcher's target, before its validation.
                if self._at_target_inside_epoch():
                    return
            self._steps.epoch_started(at_first_batch=not position.batch and not position.ended)
            batches = self._feed.epoch(position.epoch, position.batch, position.ended)
            for batch in batches:
                records = self._feed.records_of_batch(position.batch)
                if records is None:
                    if self.unit is Unit.RECORDS:
                        raise ConfigError("dlx.torch.Loop: the searcher counts records, but the "
                                          "loop cannot tell how many each batch holds: use a "
                                          "DataLoader with a batch_size, or give max_length in "
                                          "batches")
                    records = 0
                # Only an iteration's first batch can be a look (below): its point before it.
                before = (dict(position.state), self._steps.batch_mark) if first else None
                position.train_batch(self.unit, records, self.trial.target_length)
                self._steps.batch_started()
                try:
                    yield batch  # a `break` in the script closes this generator here
                except GeneratorExit:
                    if before is not None and self._steps.untouched_since_batch():
                        self._peeked = before  # next(iter(loop)): undone if the epoch iterates
                    raise
                first = False
                if self._after_batch():
                    return
            position.set(ended=True)
        except Exception:
            self._leaving = True  # its own error (or validate()'s) ends the script: said as it is
            raise
        finally:
            self._in_epoch = False

    def _undo_peek(self) -> None:
        """A look at the first batch an iteration hands out, its iterator then dropped with no
        optimizer step (`len(next(iter(loader))[0])` for the batch size: PyTorch's DDP tutorial),
        trains nothing: when the epoch then iterates the loop, the position, the step watch and
        the loader's order go back to before it, so that this iteration hands out that batch
        again, every batch is trained once and counted once, and a resumed epoch draws the same
        order (the generators at the epoch's start, as restored). A look that no iteration
        follows stays counted: a script that trains one batch and breaks without a step the loop
        can see (no optimizer given to it) trained it."""
        peeked, self._peeked = self._peeked, None
        if peeked is None:
            return
        state, mark = peeked
        self.position.state = state
        self._steps.batch_mark = mark
        self._feed.rewind()

    def _after_batch(self) -> bool:
        """Between two batches (see the module's docstring); True: the epoch's batches end."""
        position = self.position
        last = self._batches_per_epoch is not None and position.batch >= self._batches_per_epoch
        if not last and self._validate is not None and self._batch_period_due() and \
                not position.reached(self.unit, self.trial.target_length):
            # Before a notice is taken: a run requeued here has validated here, as one that is not.
            metrics = self._validated()
            if metrics:
                self.trial.report_validation(position.label, metrics)
        requested, due, settled, stop_now = _agree(
            self.trial, self.trial.checkpoint_due(position.batches) or self._save_owed,
            self._steps.settled(), self._stop_now)
        if stop_now:  # loop.stop(now=True) on a rank: the epoch ends here, the last one
            position.set(stopped=True)
            return True
        if requested:
            if last and settled and self.unit is not Unit.EPOCHS:
                # The script's code after its batch loop (scheduler.step()) runs first: the trial
                # exits at the epoch's end, before the end's own work (_end_epoch).
                self._exit_at_epoch_end = True
            elif settled or self.unit is Unit.EPOCHS:  # epochs: back to the last epoch's end
                self._exit_for_requeue()
            else:
                self._say_deferred()  # taken after the next batch that steps (_steps.py)
        if due and (last or self.unit is Unit.EPOCHS):
            self._due_at_epoch_end = True
            due = False
        if not last and position.reached(self.unit, self.trial.target_length):
            if self._at_target_inside_epoch():
                return True
        if due:
            self._save_if_settled(settled)
        return False

    def _at_target_inside_epoch(self) -> bool:
        self._ask(self._validated())
        return self._finished
