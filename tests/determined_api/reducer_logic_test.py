# SPDX-License-Identifier: Apache-2.0
"""The pure logic of Determined's metric reducers on dlx (python/dlx/compat/determined/pytorch/
_reducer.py) and the context's refusals, each checked by its message: the reductions of
evaluation_reducer(), a function reducer's values interleaved back into batch order, a name with a
dict result and no name with a non-dict, two reducers giving one metric, wrap_reducer given a
Reducer or a non-callable or a non-string name, set_stop_requested given a non-bool,
experimental.use_amp(). One worker
(DummyDistributedContext), no trial. Needs PYTHONPATH (python/ and python/dlx/compat)."""
import math
import unittest

import dlx
from determined.core import DummyDistributedContext
from determined.pytorch import MetricReducer, PyTorchTrialContext, Reducer
from determined.pytorch._reducer import reduce_values, reduced, wrap


def one_worker(stuff):
    return [stuff]


def two_workers(first, second):
    """An allgather as two ranks would give it: this rank's value, then the other's."""
    return lambda mine: [mine, second] if mine is first else [first, mine]


class Pairs(MetricReducer):
    def __init__(self, result):
        self.result = result

    def reset(self):
        pass

    def per_slot_reduce(self):
        return 0

    def cross_slot_reduce(self, per_slot_metrics):
        return self.result


class ReduceValuesTest(unittest.TestCase):
    def test_table(self):
        values, weights = [1.0, 3.0, 2.0], [10.0, 10.0, 5.0]
        for reducer, want in [(Reducer.AVG, 2.0), (Reducer.SUM, 6.0), (Reducer.MAX, 3.0), (Reducer.MIN, 1.0)]:
            with self.subTest(reducer=reducer):
                self.assertEqual(reduce_values(reducer, values, weights), want)
        self.assertTrue(math.isnan(reduce_values(Reducer.AVG, [], [])))


class WrapTest(unittest.TestCase):
    def test_a_function_gets_every_value_in_batch_order(self):
        wrapped = wrap(list, "values", True, True)
        wrapped.reducer.update(0)
        wrapped.reducer.update(2)
        mine = wrapped.reducer.per_slot_reduce()
        # Rank 0 saw batches 0 and 2, rank 1 batch 1: the function sees 0, 1, 2.
        self.assertEqual(wrapped.metrics(two_workers(mine, [1])), {"values": [0, 1, 2]})
        self.assertEqual(wrapped.reducer.values, [])  # reset after the reduction

    def test_refusals_say_what_and_how(self):
        for action, message in [
                (lambda: wrap(Reducer.SUM, None, True, True),
                 "determined: wrap_reducer(Reducer.SUM) takes a MetricReducer or a function over the values; "
                 "a Reducer is what PyTorchTrial.evaluation_reducer() returns"),
                (lambda: wrap(3, None, True, True),
                 "determined: wrap_reducer takes a det.pytorch.MetricReducer or a function over the values, "
                 "not a int"),
                (lambda: wrap(sum, 7, True, True),
                 "determined: wrap_reducer's name is 7: give a string, or None for a reducer that returns a "
                 "dict of metrics"),
                (lambda: wrap(Pairs({"a": 1}), "a", True, True).metrics(one_worker),
                 "determined: the reducer Pairs (name='a') returned a dict from cross_slot_reduce(); with a "
                 "name it returns one value (or wrap it with name=None to return a dict of metrics)"),
                (lambda: wrap(Pairs(1.0), None, True, True).metrics(one_worker),
                 "determined: the reducer Pairs (name=None) returned a float from cross_slot_reduce(); "
                 "without a name it returns a dict of metrics (or give wrap_reducer a name)"),
                (lambda: reduced([wrap(Pairs({"auc": 1}), None, True, True), wrap(Pairs(2), "auc", True, True)],
                                 one_worker),
                 "determined: two reducers return the metric 'auc': give them different names")]:
            with self.subTest(message=message[:60]):
                with self.assertRaises(dlx.ConfigError) as raised:
                    action()
                self.assertEqual(str(raised.exception), message)


class ContextTest(unittest.TestCase):
    def test_set_stop_requested_takes_a_bool(self):
        context = PyTorchTrialContext({}, {}, 0, "e", DummyDistributedContext())
        with self.assertRaises(dlx.ConfigError) as raised:
            context.set_stop_requested("yes")
        self.assertEqual(str(raised.exception), "determined: set_stop_requested takes a bool, not str")
        context.set_stop_requested(True)
        self.assertTrue(context.get_stop_requested())

    def test_use_amp_names_pytorchs_amp(self):
        context = PyTorchTrialContext({}, {}, 0, "e", DummyDistributedContext())
        with self.assertRaises(dlx.ConfigError) as raised:
            context.experimental.use_amp()
        self.assertEqual(str(raised.exception),
                         "determined on dlx: context.experimental.use_amp() is not supported: use "
                         "context.autocast_forward_pass(model) and context.wrap_scaler(torch.cuda.amp."
                         "GradScaler()) (Determined's own replacement for it)")


if __name__ == "__main__":
    unittest.main(verbosity=2)
