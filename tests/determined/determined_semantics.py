# SPDX-License-Identifier: Apache-2.0
"""What Determined itself would run for an experiment file: trial counts, grid axes,
adaptive_asha brackets and rungs, PBT rounds.

Written for the corpus test from the facts of Determined's searcher (master/pkg/searcher/
grid.go, adaptive_asha.go, asha_stopping.go, pbt.go of releases 0.13-0.38), independently of
dlx's code: the test compares `dlx plan` with these numbers. Arithmetic follows Determined's
order of float operations and its truncations (Go's int() of a float truncates toward zero)."""

import math

def is_typed(value):
    """A hyperparameter with a `type` (const/int/double/log/categorical); a mapping without
    one is a nested group; anything else (scalar, list, null) is a constant."""
    return isinstance(value, dict) and isinstance(value.get("type"), str)


def grid_axes(hyperparameters):
    """The sizes of Determined's grid axes, in file order, nested groups flattened."""
    sizes = []
    for value in (hyperparameters or {}).values():
        if is_typed(value):
            kind = value["type"]
            if kind == "const":
                sizes.append(1)
            elif kind == "categorical":
                sizes.append(len(value.get("vals") or []))
            elif kind == "int":
                # grid.go: count = min(count, maxval - minval + 1); points rounded, not deduplicated.
                sizes.append(min(int(value["count"]), int(value["maxval"]) - int(value["minval"]) + 1))
            elif kind in ("double", "log"):
                sizes.append(int(value["count"]))
            else:
                raise ValueError(f"unknown hyperparameter type {kind!r}")
        elif isinstance(value, dict):
            sizes.extend(grid_axes(value))
        else:
            sizes.append(1)
    return sizes


def grid_size(hyperparameters):
    """Determined's grid: the cartesian product of the axes (no axes at all: no trials)."""
    sizes = grid_axes(hyperparameters)
    if not sizes:
        return 0
    return math.prod(sizes)


def go_round(x):
    """Go's math.Round: half away from zero (Python's round() rounds half to even)."""
    return int(math.floor(abs(x) + 0.5)) * (1 if x >= 0 else -1)


def grid_midpoint(kind, minval, maxval, base=10.0):
    """The single point of a `count: 1` axis: the middle of the range (int: rounded)."""
    if kind == "int":
        return go_round((minval + maxval) / 2.0)
    if kind == "double":
        return (minval + maxval) / 2.0
    return base ** ((minval + maxval) / 2.0)


def leaves(hyperparameters, path=()):
    """[(path, spec)] of every hyperparameter, nested groups descended, in file order."""
    out = []
    for name, value in (hyperparameters or {}).items():
        if isinstance(value, dict) and not is_typed(value):
            out.extend(leaves(value, path + (str(name),)))
        else:
            out.append((path + (str(name),), value))
    return out


def axis_values(spec):
    """The values of one grid axis, as grid.go computes them."""
    if not is_typed(spec):
        return [spec]
    kind = spec["type"]
    if kind == "const":
        return [spec.get("val")]
    if kind == "categorical":
        return list(spec.get("vals") or [])
    lo, hi, count = spec["minval"], spec["maxval"], int(spec["count"])
    if kind == "int":
        count = min(count, int(hi) - int(lo) + 1)
        if count == 1:
            return [grid_midpoint("int", lo, hi)]
        return [go_round(lo + i * (hi - lo) / (count - 1)) for i in range(count)]
    if count == 1:
        return [grid_midpoint(kind, float(lo), float(hi), float(spec.get("base", 10.0)))]
    points = [float(lo) + i * (float(hi) - float(lo)) / (count - 1) for i in range(count)]
    if kind == "log":
        return [float(spec.get("base", 10.0)) ** x for x in points]
    return points


def grid_points(hyperparameters):
    """Every grid point as {path tuple: value}, in Determined's order (the last axis fastest)."""
    specs = leaves(hyperparameters)
    points = [{}]
    for path, spec in specs:
        points = [{**point, path: value} for point in points for value in axis_values(spec)]
    return points if specs else []


def in_space(spec, value, close):
    """Whether a sampled value is one Determined could draw for this hyperparameter."""
    if not is_typed(spec):
        return close(value, spec)
    kind = spec["type"]
    if kind == "const":
        return close(value, spec.get("val"))
    if kind == "categorical":
        return any(close(value, v) for v in spec.get("vals") or [])
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    lo, hi = float(spec["minval"]), float(spec["maxval"])
    if kind == "int":
        return float(value).is_integer() and lo <= value <= hi
    if kind == "log":
        base = float(spec.get("base", 10.0))
        lo, hi = base ** lo, base ** hi
    slack = 1e-9 * max(abs(lo), abs(hi), 1e-300)
    return lo - slack <= value <= hi + slack


def training_units(searcher):
    """The length a trial trains to, in the file's unit: max_time (0.38, with time_metric), a
    bare max_length, or the one value of `max_length: {batches|records|epochs: N}`."""
    if searcher.get("max_time") is not None and searcher.get("time_metric") is not None:
        return int(searcher["max_time"])
    length = searcher.get("max_length")
    if isinstance(length, dict):
        (units,) = length.values()
        return int(units)
    return int(length)


def bracket_trials(max_trials, divisor, bracket_rungs):
    """getBracketMaxTrials: trials split so each bracket gets about the same total budget;
    the remainder goes to the first (most aggressive) bracket."""
    weights = [divisor ** (rungs - 1) / rungs for rungs in bracket_rungs]
    total = 0.0
    for weight in weights:
        total += weight
    trials = [max(int(weight / total * max_trials), 1) for weight in weights]
    trials[0] += max(max_trials - sum(trials), 0)
    return trials


def bracket_rung_counts(searcher):
    """The number of rungs of each adaptive_asha bracket, most rungs first."""
    divisor = float(searcher.get("divisor", 4))
    explicit = searcher.get("bracket_rungs") or []
    if explicit:
        return sorted((int(r) for r in explicit), reverse=True)
    max_rungs = min(int(searcher.get("max_rungs", 5)),
                    int(math.log(training_units(searcher)) / math.log(divisor)) + 1,
                    int(math.log(int(searcher["max_trials"])) / math.log(divisor)) + 1)
    mode = searcher.get("mode", "standard")
    if mode == "aggressive":
        counts = [max_rungs]
    elif mode == "conservative":
        counts = list(range(1, max_rungs + 1))
    elif mode == "standard":
        counts = list(range((max_rungs - 1) // 2 + 1, max_rungs + 1))
    else:
        raise ValueError(f"unknown adaptive mode {mode!r}")
    return sorted(counts, reverse=True)


def rung_lengths(num_rungs, divisor, units):
    """Rung k of R trains to max(1, floor(units / divisor^(R-1-k))) (Determined >= 0.18)."""
    return [max(int(units / divisor ** (num_rungs - k - 1)), 1) for k in range(num_rungs)]


def asha_brackets(searcher):
    """[(num_rungs, trials, [rung lengths])] for adaptive_asha; async_halving is one bracket."""
    divisor = float(searcher.get("divisor", 4))
    units = training_units(searcher)
    if searcher["name"] == "async_halving":
        rungs = int(searcher.get("num_rungs", searcher.get("max_rungs", 5)))
        return [(rungs, int(searcher["max_trials"]), rung_lengths(rungs, divisor, units))]
    counts = bracket_rung_counts(searcher)
    trials = bracket_trials(int(searcher["max_trials"]), divisor, counts)
    return [(r, t, rung_lengths(r, divisor, units)) for r, t in zip(counts, trials)]


def pbt_counts(searcher):
    """(rounds, population, Determined's distinct trials): round 0 creates the population;
    after each of the first num_rounds-1 rounds int(truncate_fraction * population) new trials
    replace the worst (the survivors go on as the same trials)."""
    population = int(searcher["population_size"])
    rounds = int(searcher["num_rounds"])
    replaced = int(float(searcher["replace_function"]["truncate_fraction"]) * population)
    return rounds, population, population + (rounds - 1) * replaced


def dlx_trial_count(config):
    """The trials dlx must plan for a Determined file: Determined's trial count (PBT: the
    population plus each round's replacements; survivors go on as the same trial)."""
    searcher = config["searcher"]
    method = searcher["name"]
    if method == "single":
        return 1
    if method == "grid":
        return grid_size(config.get("hyperparameters"))
    if method == "adaptive_asha":
        # Each bracket gets at least one trial, so the sum can pass max_trials (many explicit
        # bracket_rungs, few trials).
        return sum(trials for _, trials, _ in asha_brackets(searcher))
    if method in ("random", "async_halving"):
        return int(searcher["max_trials"])
    if method == "pbt":
        return pbt_counts(searcher)[2]
    raise ValueError(f"no trial count for searcher {method!r}")


def self_check():
    """Values from Determined's own unit tests and the issue's worked example: if these fail,
    this file, not dlx, is wrong."""
    assert bracket_trials(20, 3.0, [3, 2, 1]) == [12, 5, 3]
    assert bracket_trials(50, 3.0, [4, 3]) == [35, 15]
    assert bracket_trials(50, 4.0, [3, 2]) == [37, 13]
    assert bracket_trials(100, 4.0, [4, 3, 2]) == [70, 22, 8]
    standard = {"name": "adaptive_asha", "mode": "standard", "max_time": 100, "time_metric": "batches",
                "max_trials": 10}
    assert [(r, t) for r, t, _ in asha_brackets(standard)] == [(2, 7), (1, 3)]
    conservative = {"name": "adaptive_asha", "mode": "conservative", "max_time": 1000,
                    "time_metric": "batches", "divisor": 3.0, "max_trials": 10}
    assert [(r, t) for r, t, _ in asha_brackets(conservative)] == [(3, 7), (2, 2), (1, 1)]
    issue = {"name": "adaptive_asha", "max_length": {"batches": 937}, "max_trials": 16}
    assert asha_brackets(issue) == [(3, 12, [58, 234, 937]), (2, 4, [234, 937])]
    assert grid_size({"a": {"type": "int", "minval": 1, "maxval": 3, "count": 10},
                      "b": {"type": "categorical", "vals": [1, 2]}, "c": 5,
                      "d": {"e": {"type": "double", "minval": 0, "maxval": 1, "count": 4}}}) == 24
    assert grid_midpoint("int", 1, 4) == 3 and grid_midpoint("double", 0.0, 1.0) == 0.5
    assert axis_values({"type": "int", "minval": 1, "maxval": 3, "count": 10}) == [1, 2, 3]
    assert axis_values({"type": "int", "minval": 0, "maxval": 10, "count": 4}) == [0, 3, 7, 10]
    assert axis_values({"type": "log", "minval": -2, "maxval": 0, "count": 1, "base": 10}) == [0.1]
    assert len(grid_points({"a": {"type": "int", "minval": 1, "maxval": 3, "count": 10},
                            "d": {"e": {"type": "categorical", "vals": [1, 2]}}})) == 6
    assert dlx_trial_count({"searcher": {"name": "adaptive_asha", "max_length": 100, "max_trials": 2,
                                         "bracket_rungs": [1, 2, 3]}}) == 3
    assert pbt_counts({"population_size": 9, "num_rounds": 3,
                       "replace_function": {"truncate_fraction": 0.2}}) == (3, 9, 11)
