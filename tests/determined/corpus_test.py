# SPDX-License-Identifier: Apache-2.0
"""Real Determined experiment files through the real dlx binary (SOURCES.md: where each came from).

For every file in corpus/:
  cut    its `hyperparameters` and `searcher` sections, kept verbatim, under a `name` and a command
         `entrypoint`: `dlx validate` accepts it with Determined's trial count, and `dlx plan --json`
         plans Determined's trials (grid points and their values, max_trials with values in their
         ranges, adaptive_asha brackets and rungs, PBT rounds) and the array Determined's default
         throttle implies, as computed by determined_semantics.py (not by dlx's code);
  whole  the file as Determined users have it: dlx accepts it, with one warning line naming the
         top-level keys it ignores (a `module:Class` entrypoint, Determined's Trial API, runs
         through dlx's harness: python3 -m determined.exec.harness module:Class);
  convert (whole file valid) `dlx convert-determined` prints a dlx file that validates without
         warnings to the same trial count, a module:Class entrypoint mapped to the harness.
For every file in refused/ (searchers Determined retired or dlx cannot run, pre-0.13 `max_steps`),
the cut file is refused with a message naming the replacement.

Prints one line per file and check (`ok`) or per problem found, then a summary by problem.
Usage: corpus_test.py DLX_BINARY TESTS_DETERMINED_DIR [--only SUBSTRING]"""

import collections
import json
import pathlib
import re
import subprocess
import sys
import tempfile

import yaml

import determined_semantics as det

# Top-level keys of a Determined file that dlx gives a meaning to (issue 20, docs/config-reference.md);
# every other top-level key must be named in dlx's warning line.
SAVE_KEYS = {"save_trial_best", "save_trial_latest", "save_experiment_best"}
MAPPED_KEYS = {
    "name", "description", "labels", "entrypoint", "hyperparameters", "searcher", "resources",
    "max_restarts", "min_validation_period", "min_checkpoint_period", "records_per_epoch",
    "checkpoint_policy", "environment", "reproducibility", "bind_mounts",
} | SAVE_KEYS
# Whole files that carry a placeholder for the user to fill in, which Determined refuses as well
# (no resource pool is named `<RESOURCE_POOL>`): dlx must refuse them naming the key.
PLACEHOLDER_REFUSALS = {
    "determined-examples-b348d4f-blog-lora-parameters-lora.yaml": "resources.resource_pool",
}
DETERMINED_DEFAULT_MAX_CONCURRENT = 16
TOP_LEVEL_KEY = re.compile(r"^([A-Za-z_][\w.-]*)\s*:")


def top_level_blocks(text):
    """{key: the lines of its block, verbatim}: a block runs from a key at column 0 to the next."""
    blocks, current = {}, None
    for line in text.splitlines(keepends=True):
        match = TOP_LEVEL_KEY.match(line)
        if match:
            current = match.group(1)
            blocks[current] = [line]
        elif current is not None and not line.startswith("---"):
            blocks[current].append(line)
    return {key: "".join(lines) for key, lines in blocks.items()}


def cut_text(path, text):
    """The file reduced to what the issue's survey ran: name, a command entrypoint, and the
    hyperparameters and searcher sections byte for byte (no YAML round trip to change a type)."""
    blocks = top_level_blocks(text)
    name = re.sub(r"[^A-Za-z0-9._-]", "-", path.stem).lstrip(".")[:64]
    out = [f"# {path.name} cut to hyperparameters and searcher (tests/determined/corpus_test.py)\n",
           f"name: {name}\n", "entrypoint: python3 train.py\n"]
    for key in ("hyperparameters", "searcher"):
        if key in blocks:
            block = blocks[key]
            out.append(block if block.endswith("\n") else block + "\n")
    return "".join(out)


def is_module_class(entrypoint):
    """Determined's Trial API form `model_def:MyTrial` (one word with a colon), not a command."""
    return isinstance(entrypoint, str) and re.fullmatch(r"[\w.]+:[\w.]+", entrypoint.strip()) is not None


def run(args):
    done = subprocess.run(args, capture_output=True, text=True, timeout=60)
    return done.returncode, done.stdout, done.stderr


def parse_array(spec):
    """`0-N%K` -> (N+1, K or None)."""
    match = re.fullmatch(r"0(?:-(\d+))?(?:%(\d+))?", spec)
    if not match:
        raise ValueError(f"array {spec!r} is not 0-N[%K]")
    return int(match.group(1) or 0) + 1, int(match.group(2)) if match.group(2) else None


def size_of(value):
    return len(value) if isinstance(value, list) else int(value)


NUMBER = re.compile(r"[-+]?(\.\d+|\d+(\.\d*)?)([eE][-+]?\d+)?")


def normal(value):
    """A value as both sides can agree on it: numbers to 10 significant digits, and numeric text
    as a number (PyYAML reads `1e-3` as text where YAML 1.2 and dlx read a number)."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)):
        return float(f"{float(value):.10g}")
    if isinstance(value, str) and NUMBER.fullmatch(value):
        return normal(float(value))
    if isinstance(value, list):
        return [normal(v) for v in value]
    if isinstance(value, dict):
        return {str(k): normal(v) for k, v in value.items()}
    return value


def close(a, b):
    return normal(a) == normal(b)


def lookup(hparams, path):
    """A trial's value of the hyperparameter at `path`, whether dlx shows groups nested
    ({optim: {lr: ..}}) or flattened ({optim.lr: ..})."""
    node = hparams
    for i, part in enumerate(path):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, dict) and ".".join(path[i:]) in node:
            return node[".".join(path[i:])]
        elif "." in part and i == len(path) - 1:
            return lookup(node, tuple(part.split(".")))
        else:
            raise KeyError(".".join(path))
    return node


def check_plan_values(plan, config):
    """Grid: exactly Determined's points; other methods: every value one Determined could draw."""
    searcher, space = config["searcher"], config.get("hyperparameters") or {}
    specs = det.leaves(space)
    trials = plan["trials"]
    if searcher["name"] == "pbt":
        trials = trials[:int(searcher["population_size"])]  # later rounds come from explore
    try:
        if searcher["name"] == "grid":
            want = collections.Counter(json.dumps([normal(p[path]) for path, _ in specs])
                                       for p in det.grid_points(space))
            got = collections.Counter(json.dumps([normal(lookup(t["hparams"], path)) for path, _ in specs])
                                      for t in trials)
            if want != got:
                missing = next(iter(want - got), None)
                names = [".".join(path) for path, _ in specs]
                return f"grid points differ from Determined's: {names} = {missing} not planned"
            return None
        for trial in trials:
            for path, spec in specs:
                value = lookup(trial["hparams"], path)
                if not det.in_space(spec, value, close):
                    return f"trial {trial['id']}: {'.'.join(path)} = {json.dumps(value)[:60]} is outside {json.dumps(spec)[:80]}"
    except KeyError as missing:
        return f"plan: trial hparams lack {missing}"
    return None


def check_plan_brackets(plan, searcher):
    expected = det.asha_brackets(searcher)
    brackets = plan.get("brackets")
    if brackets is None:
        return "plan --json has no `brackets` (tests/determined: plan-fields)"
    got = [(int(b.get("num_rungs", len(b.get("rungs", [])))), size_of(b["trials"]),
            [int(r["length"]) for r in b.get("rungs", [])]) for b in brackets]
    if got != expected:
        return f"brackets (rungs, trials, lengths) {got}, Determined's {expected}"
    return None


def check_plan_pbt(plan, searcher):
    """Round 0 starts the population; every later round replaces int(truncate_fraction x
    population) members with new trials and continues the rest."""
    rounds, population, _ = det.pbt_counts(searcher)
    replaced = int(float(searcher["replace_function"]["truncate_fraction"]) * population)
    got = plan.get("rounds")
    if not got:
        return "plan --json has no `rounds` (tests/determined: plan-fields)"
    want = [(population, 0)] + [(replaced, population - replaced)] * (rounds - 1)
    seen = [(size_of(r["new_trials"]), int(r.get("continued", 0))) for r in got]
    if seen != want:
        return f"rounds (new trials, continued) {seen}, Determined's {want}"
    return None


def check_cut(dlx, cut_path, config):
    """Problems of the cut file, or [] when dlx validates and plans it as Determined would."""
    searcher = config["searcher"]
    method = searcher.get("name")
    expected = det.dlx_trial_count(config)
    code, out, err = run([dlx, "validate", "--json", str(cut_path)])
    try:
        result = json.loads(out)[0]
    except (ValueError, IndexError):
        return [f"validate --json printed no result (exit {code}): {err.strip()[:200]}"]
    if not result.get("valid"):
        error = result.get("error") or (result.get("errors") or [{}])[0]
        return ["validate: " + (error.get("message") or json.dumps(error))]
    if int(result.get("trials", -1)) != expected:
        return [f"validate: {result.get('trials')} trials, Determined's {expected}"]

    code, out, err = run([dlx, "plan", "--json", str(cut_path)])
    if code != 0:
        return ["plan: " + (err.strip().splitlines() or [f"exit {code}"])[0]]
    plan = json.loads(out)
    problems = []
    if "trial_count" in plan and int(plan["trial_count"]) != expected:
        problems.append(f"plan: trial_count {plan['trial_count']}, Determined's {expected}")
    # PBT lists the population's points: later trials' values come from exploring.
    listed = int(searcher["population_size"]) if method == "pbt" else expected
    if len(plan["trials"]) != listed:
        problems.append(f"plan: {len(plan['trials'])} trials listed, expected {listed}")
    tickets, throttle = parse_array(plan["array"])
    if "tickets" in plan and int(plan["tickets"]) != tickets:
        problems.append(f"plan: tickets {plan['tickets']} but array {plan['array']}")
    # PBT: one array task per member and round (docs/searchers.md).
    want_tickets = det.pbt_counts(searcher)[0] * int(searcher["population_size"]) if method == "pbt" else expected
    if method in ("single", "grid", "random", "pbt") and tickets != want_tickets:
        problems.append(f"plan: array {plan['array']} for {want_tickets} tickets")
    given = searcher.get("max_concurrent_trials")
    limit = int(given) if given else DETERMINED_DEFAULT_MAX_CONCURRENT
    # Determined's PBT (0.13-0.17) had no max_concurrent_trials: its population ran at once.
    if method == "pbt" and given is None:
        limit = int(searcher["population_size"])
    if (given is None or int(given) > 0) and tickets > limit and throttle != limit:
        problems.append(f"plan: array {plan['array']}, expected a throttle of %{limit}"
                        + ("" if given else " (Determined's default max_concurrent_trials)"))
    problems += [p for p in [check_plan_values(plan, config)] if p]
    if method in ("adaptive_asha", "async_halving"):
        problems += [p for p in [check_plan_brackets(plan, searcher)] if p]
    if method == "pbt":
        problems += [p for p in [check_plan_pbt(plan, searcher)] if p]
    return problems


def ignored_keys(config):
    """The top-level keys dlx must name in its warning. `checkpoint_storage` holding only the
    save_* counts (older Determined files keep them there) is mapped, not ignored."""
    keys = set(config) - MAPPED_KEYS
    storage = config.get("checkpoint_storage")
    if isinstance(storage, dict) and storage and set(storage) <= SAVE_KEYS:
        keys.discard("checkpoint_storage")
    # dlx's harness aggregates gradients: with a Trial class, only the other keys are ignored.
    optimizations = config.get("optimizations")
    if is_module_class(config.get("entrypoint")) and isinstance(optimizations, dict) and \
            set(optimizations) <= {"aggregation_frequency"}:
        keys.discard("optimizations")
    return sorted(keys)


def check_whole(dlx, path, config):
    code, out, err = run([dlx, "validate", str(path)])
    text = out + err
    if path.name in PLACEHOLDER_REFUSALS:
        key = PLACEHOLDER_REFUSALS[path.name]
        if code == 0 or key not in text:
            return [f"its placeholder {key} was not refused: " + ((text.strip().splitlines() or [""])[0])]
        return []
    if code != 0:
        return [(text.strip().splitlines() or [f"exit {code}"])[0]]
    warnings = [line for line in text.splitlines() if "warning" in line.lower()]
    ignored = ignored_keys(config)
    if len(warnings) > 1:
        return [f"{len(warnings)} warning lines, expected one"]
    if ignored:
        missing = [key for key in ignored if not warnings or key not in warnings[0]]
        if missing:
            return ["the warning line does not name ignored key(s) " + ", ".join(missing)]
    return []


def check_convert(dlx, path, config, tmp):
    """`dlx convert-determined` of a file with a command entrypoint prints a dlx file that
    validates on its own, without warnings, to Determined's trial count."""
    code, out, err = run([dlx, "convert-determined", str(path)])
    if code != 0:
        return [(err.strip().splitlines() or [f"exit {code}"])[0]]
    if is_module_class(config.get("entrypoint")):
        # Determined's Trial API runs through dlx's harness (python/dlx/compat/determined).
        harness = f"python3 -m determined.exec.harness {config['entrypoint'].strip()}"
        if harness not in out:
            return [f"its module:Class entrypoint is not mapped to `{harness}` in:\n{out[:400]}"]
    converted = pathlib.Path(tmp) / (path.stem + ".converted.yaml")
    converted.write_text(out)
    code, out, err = run([dlx, "validate", str(converted)])
    if code != 0:
        return ["the converted file: " + ((out + err).strip().splitlines() or [f"exit {code}"])[0]]
    if "warning" in (out + err).lower():
        return ["the converted file still draws a warning: " + (out + err).strip().splitlines()[0]]
    code, out, err = run([dlx, "validate", "--json", str(converted)])
    trials, expected = json.loads(out)[0].get("trials"), det.dlx_trial_count(config)
    if trials != expected:
        return [f"the converted file: {trials} trials, Determined's {expected}"]
    return []


def replacements_for(config):
    """What a refusal may name: the method or key that replaces each refused construct of the
    file (a file with a retired method and `max_steps` is answered by either)."""
    searcher = config["searcher"]
    names = []
    if searcher.get("name") in ("adaptive", "adaptive_simple"):
        names.append("adaptive_asha")
    if searcher.get("name") == "custom":
        names.append("custom")
    if "max_steps" in searcher:
        names.append("max_length")
    if not names:
        raise ValueError("not a refused construct")
    return names


def check_refused(dlx, cut_path, config):
    code, out, err = run([dlx, "validate", str(cut_path)])
    text = out + err
    if code == 0:
        return ["accepted: " + text.strip()[:200]]
    names = replacements_for(config)
    if not any(name in text for name in names):
        return [f"the message does not name `{'` or `'.join(names)}`: " + text.strip().splitlines()[0]]
    if names == ["custom"] and not re.search(r"\b(adaptive_asha|random|grid)\b", text):
        return ["the message for `custom` names no built-in searcher to use instead"]
    return []


def main():
    det.self_check()
    dlx, root = sys.argv[1], pathlib.Path(sys.argv[2])
    only = sys.argv[4] if len(sys.argv) > 4 and sys.argv[3] == "--only" else ""
    failures = collections.Counter()
    checked = 0
    with tempfile.TemporaryDirectory() as tmp:
        for kind in ("corpus", "refused"):
            for path in sorted((root / kind).glob("*.yaml")):
                if only not in path.name:
                    continue
                text = path.read_text()
                config = yaml.safe_load(text)
                cut_path = pathlib.Path(tmp) / path.name
                cut_path.write_text(cut_text(path, text))
                if kind == "corpus":
                    results = {"cut": check_cut(dlx, cut_path, config), "whole": check_whole(dlx, path, config)}
                    if not results["whole"] and path.name not in PLACEHOLDER_REFUSALS:
                        results["convert"] = check_convert(dlx, path, config, tmp)
                else:
                    results = {"refused": check_refused(dlx, cut_path, config)}
                checked += 1
                for check, problems in results.items():
                    if not problems:
                        print(f"{kind}/{path.name}: {check}: ok")
                    for problem in problems:
                        print(f"{kind}/{path.name}: {check}: {problem}")
                        # The category: the problem without the file's own numbers and names.
                        category = re.sub(r"\S+\.yaml:\d+:\d+: ", "", problem)
                        category = re.sub(r"\d+", "N", category)[:120]
                        failures[f"{check}: {category}"] += 1
    print(f"# {checked} files checked, {sum(failures.values())} problems")
    for category, count in failures.most_common():
        print(f"# {count:3d}  {category}")
    if checked < 60 and not only:
        print(f"# only {checked} files: the corpus must hold at least 60")
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
