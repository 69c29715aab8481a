#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""`dlx report` end to end: the real dlx binary on synthetic experiments (dlx_write_report_sample),
each page rendered by headless Chromium. A page counts as rendered when its script ran to the end
without an error (window.onerror and console.error are recorded into the page), every chart it drew
has marks (points in its data and painted pixels on its canvas), every trial is named in the table
and in its own section, the table sorts (the page's self-test clicks a column title; the order is
read back from the DOM Chromium dumps) and no text from the experiment became markup. Then the size
limit at scale, --json, --watch, and the refusals with their messages.

usage: dlx_report_test.py DLX WRITE_SAMPLE SCREENSHOT_DIR
Environment: DLX_REPORT_BIG="TRIALS POINTS" (default "1000 1000"; the full "1000 10000" is
bench/report/'s).
"""
import html.parser
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

DLX, WRITE_SAMPLE, SHOTS = sys.argv[1], sys.argv[2], sys.argv[3]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
SIZE_LIMIT = 10 * 1024 * 1024
failures = []


def check(condition, what):
    if not condition:
        failures.append(what)
        print("FAIL:", what, flush=True)


def run(*args, timeout=300):
    env = {k: v for k, v in os.environ.items() if k not in ("SLURM_CONF", "DLX_STORAGE_ROOT", "DLX_SITE_CONFIG")}
    p = subprocess.run([DLX, *args], capture_output=True, text=True, timeout=timeout, env=env)
    return p.returncode, p.stdout, p.stderr


def sample(directory, case, *extra):
    subprocess.run([WRITE_SAMPLE, directory, case, *map(str, extra)], check=True)
    return directory


class Page(html.parser.HTMLParser):
    """What the test reads back from Chromium's DOM: table rows in order, tags, section titles."""

    def __init__(self):
        super().__init__()
        self.rows, self.tags, self.summary, self.text = [], {}, "", []
        self._in_summary = self._in_tbody_of_trials = False
        self._table = None
        self.sections = []
        self.bars = {}  # trial -> its bar in the PBT lineage drawing
        self._in_section_title = False
        self.meta_refresh = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags[tag] = self.tags.get(tag, 0) + 1
        if tag == "meta" and a.get("http-equiv") == "refresh":
            self.meta_refresh = True
        if tag == "table":
            self._table = a.get("id")
        if tag == "tr" and self._table == "trials" and "data-trial" in a:
            self.rows.append(int(a["data-trial"]))
        if a.get("id") == "dlx-render-summary":
            self._in_summary = True
        if tag == "details" and a.get("id", "").startswith("trial-"):
            self.sections.append(a["id"])
        if tag == "rect" and "data-trial" in a and "data-first-round" in a:  # a PBT lineage bar
            self.bars[int(a["data-trial"])] = {
                "first": int(a["data-first-round"]), "last": int(a["data-last-round"]),
                "member": int(a["data-member"]), "x": float(a["x"]), "y": float(a["y"]),
                "width": float(a["width"])}

    def handle_endtag(self, tag):
        if tag == "div" and self._in_summary:
            self._in_summary = False
        if tag == "table":
            self._table = None

    def handle_data(self, data):
        if self._in_summary:
            self.summary += data
        self.text.append(data)


def render(path, name, shot=True):
    """The page as Chromium leaves it, parsed, and its render summary."""
    profile = tempfile.mkdtemp(prefix="dlx-report-chromium-")
    flags = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
             f"--user-data-dir={profile}", "--virtual-time-budget=20000", "--window-size=1400,4000"]
    url = "file://" + os.path.abspath(path) + "?selftest"
    try:
        dom = subprocess.run(flags + ["--dump-dom", url], capture_output=True, text=True, timeout=240).stdout
        if shot:
            os.makedirs(SHOTS, exist_ok=True)
            subprocess.run(flags + [f"--screenshot={os.path.join(SHOTS, name + '.png')}", url],
                           capture_output=True, timeout=240)
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    page = Page()
    page.feed(dom)
    page.full_text = "".join(page.text)
    try:
        page.render = json.loads(page.summary)
    except ValueError:
        page.render = None
    check(page.render is not None, f"{name}: the page's script did not finish (no render summary)")
    return page


def check_rendered(page, name, trial_count, every_chart_marked=True):
    if page.render is None:
        return
    r = page.render
    check(r["errors"] == [], f"{name}: page errors {r['errors']}")
    check(r["trials"] == trial_count, f"{name}: {r['trials']} trials on the page, not {trial_count}")
    check(sorted(page.rows) == list(range(trial_count)), f"{name}: table rows {page.rows} do not name every trial")
    check(sorted(page.sections) == sorted(f"trial-{i}" for i in range(trial_count)),
          f"{name}: not every trial has its section: {len(page.sections)}")
    for i in range(trial_count):
        check(f"Trial {i} \u2014" in page.full_text, f"{name}: trial {i} is not named in its section")
    if every_chart_marked:
        for c in r["charts"]:
            check(c["marks"] > 0 and c["painted"] > 0, f"{name}: chart {c['id']} has no marks: {c}")
            check(c["outside"] == 0, f"{name}: chart {c['id']} places points off its axes: {c}")
    for s in r["svgs"]:
        check(s["paths"] > 0, f"{name}: {s['id']} has no marks")
    test = r["selftest"] or {}
    check(test.get("sorted_by") == "best" and test.get("ascending") is True, f"{name}: the self-test did not sort: {test}")
    return test


def check_filtered(page, name, model):
    """The self-test's filters: by state (completed), then by the text "trial 1"."""
    test = page.render["selftest"] if page.render else {}
    completed = sum(t["state"] == "completed" for t in model["trials"])
    check(test.get("completed_shown") == completed, f"{name}: state filter showed {test.get('completed_shown')}, not {completed}")
    expected = sorted(t["id"] for t in model["trials"] if str(t["id"]).startswith("1"))
    check(sorted(test.get("text_shown", [])) == expected, f"{name}: text filter showed {test.get('text_shown')}, not {expected}")


def check_sorted_by_best(page, name, model):
    """The rows in the DOM, after the self-test's click: by best metric, ascending, missing last."""
    best = {t["id"]: t["best"] for t in model["trials"]}

    def key(v):
        return float(v) if isinstance(v, (int, float)) else {"inf": float("inf"), "-inf": float("-inf")}.get(v)

    values = [key(best[i]) for i in page.rows]
    present = [v for v in values if v is not None]
    check(present == sorted(present), f"{name}: table not sorted by best: {values}")
    check(values[len(present):] == [None] * (len(values) - len(present)), f"{name}: missing values not last: {values}")


def model_of(path):
    """The data model inlined in a page (the test reads it as the page's script does)."""
    text = open(path, encoding="utf-8").read()
    start = text.index('<script id="dlx-data" type="application/json">') + len('<script id="dlx-data" type="application/json">')
    return json.loads(text[start:text.index("</script>", start)])


def leftovers(directory):
    return [n for n in os.listdir(directory) if n.startswith(".tmp.")]


def main():
    check(CHROMIUM is not None, "chromium is not installed (scripts/install-deps.sh installs it)")
    if CHROMIUM is None:
        return
    work = tempfile.mkdtemp(prefix="dlx-report-test-")
    out = os.path.join(work, "out")
    os.makedirs(out)
    try:
        # --- a page with no trials yet
        empty = sample(os.path.join(work, "empty"), "empty")
        rc, stdout, stderr = run("report", empty, "-o", os.path.join(out, "empty.html"))
        check(rc == 0, f"empty: exit {rc}: {stderr}")
        page = render(os.path.join(out, "empty.html"), "empty")
        check_rendered(page, "empty", 4, every_chart_marked=False)
        check("No trial has reported a metric yet" in page.full_text, "empty: no word that nothing was reported")

        # --- every state, NaN and inf, a string hyperparameter, restarts, hostile text
        mixed = sample(os.path.join(work, "mixed"), "mixed")
        mixed_html = os.path.join(out, "mixed.html")
        rc, stdout, stderr = run("report", mixed, "-o", mixed_html, "--json")
        check(rc == 0, f"mixed: exit {rc}: {stderr}")
        summary = json.loads(stdout)
        check(summary["path"] == mixed_html and summary["trials"] == 12 and summary["bytes"] == os.path.getsize(mixed_html),
              f"mixed: --json {summary}")
        model = model_of(mixed_html)
        page = render(mixed_html, "mixed")
        check_rendered(page, "mixed", 12)
        check_sorted_by_best(page, "mixed", model)
        check_filtered(page, "mixed", model)
        for tag in ("img", "b", "i"):
            check(tag not in page.tags, f"mixed: text from the experiment became a <{tag}> element")
        check(page.tags.get("script") == 4, f"mixed: {page.tags.get('script')} script elements, not the page's 4")
        check('<img src=x onerror="window.dlxInjected=1"></script>' in page.full_text,
              "mixed: the hostile hyperparameter value is not shown as text")
        check("<i>grad<script>" in page.full_text, "mixed: the hostile metric name is not shown as text")
        check("infinite values" in page.full_text, "mixed: the infinite values are not mentioned")
        check("No metrics reported yet." in page.full_text, "mixed: the trial without metrics is not said to have none")
        check("none yet: the trial has not started" in page.full_text, "mixed: the trial not started is not said to be so")
        # The code snapshot's commit and its dirty flag (code.json), in the model and on the page.
        check(model["meta"]["code"] == "commit 0123456789ab (dirty) on main", f"mixed: code {model['meta']['code']}")
        check("code commit 0123456789ab (dirty) on main" in page.full_text, "mixed: the page does not show the code's commit")
        trial6 = next(t for t in model["trials"] if t["id"] == 6)
        check([a["how"] for a in trial6["attempts"]] == ["preemption", "crash", "completed"], f"mixed: attempts {trial6['attempts']}")
        # Every attempt's nodes: the restarts' previous_nodes, then the record's own.
        check([a.get("nodes") for a in trial6["attempts"]][:2] == ["n1,n2", "n2,n3"], f"mixed: nodes {trial6['attempts']}")
        check(trial6["time_lost"] == 45.5 + 30 + 12, f"mixed: time lost {trial6['time_lost']}")
        check(trial6["cuts"] == [100, 300], f"mixed: cuts {trial6['cuts']}")
        check(any(v is None for c in trial6["curves"] for v in c["v"]), "mixed: no gap where trial 6 restarted")
        check(any(c["id"] == "timeline-chart" for c in page.render["charts"]), "mixed: no timeline chart")
        # Resources: trials 6 and 7 have system samples; rank 1 of trial 6 idled, trial 7 used the
        # most memory; the chart of the sampled trials is drawn, and trial 6's section has its ranks'.
        check(model["resources"]["trials"] == 3, f"mixed: resources {model['resources']}")
        texts = [f["text"] for f in model["resources"]["findings"]]
        check(any(t.startswith("trial 6: rank 1 on n2 used 14% of a core against 97% for the median rank") for t in texts),
              f"mixed: no finding of trial 6's idle rank: {texts}")
        check(any(t.startswith("trial 7 used the most memory: ") for t in texts), f"mixed: no memory finding: {texts}")
        check(any(t.startswith("trial 6: rank 0's GPU was idle 59% of the time while its CPU was saturated: input-bound?")
                  for t in texts), f"mixed: no finding of trial 6's idle GPU: {texts}")
        trial6r = next(t for t in model["trials"] if t["id"] == 6)["resources"]
        check(len(trial6r["ranks"]) == 2 and abs(trial6r["cpu_mean"] - 111.068) < 0.001 and trial6r["samples"] == 120,
              f"mixed: trial 6's resources {dict((k, v) for k, v in trial6r.items() if k != 'ranks')}")
        rank0 = trial6r["ranks"][0]
        check(trial6r.get("gpu_mean") == rank0.get("gpu_mean") and abs(rank0["gpu_mean"] - (35 * 4 + 24 * 92) / 59) < 0.01
              and trial6r.get("gpu_mem_peak") == 6e9 and "gpu" not in trial6r["ranks"][1],
              f"mixed: trial 6's GPU resources {dict((k, v) for k, v in rank0.items() if k not in ('cpu', 'mem', 'gpu'))}")
        check(next(t for t in model["trials"] if t["id"] == 5)["resources"] is None, "mixed: resources of an unsampled trial")
        trial9r = next(t for t in model["trials"] if t["id"] == 9)["resources"]
        check(trial9r.get("gpu_mean") == 70 and trial9r.get("gpu_mem_peak") == 3e9, f"mixed: trial 9's GPUs {trial9r.get('gpu_mean')}")
        # dlx status: the running trial's GPUs now (the mean of its GPUs' last samples, the memory
        # its processes hold on them, summed).
        status = json.loads(run("status", mixed, "--json")[1])
        row9 = next(t for t in status["trials"] if t["id"] == 9)
        check(row9.get("system", {}).get("gpu_percent") == 70 and row9["system"].get("gpu_memory_bytes") == 4e9,
              f"mixed: dlx status --json of trial 9: {row9.get('system')}")
        table = run("status", mixed)[1]
        header = next(line for line in table.splitlines() if line.startswith("# trial"))
        line9 = next(line for line in table.splitlines() if line.split()[:1] == ["9"])
        check("gpu%" in header and "gpu mem" in header and " 70 " in line9 and "4.00 GB" in line9,
              f"mixed: dlx status's GPU columns:\n{header}\n{line9}")
        drawn = {c["id"]: c for c in page.render["charts"]}
        check("resources-chart" in drawn and drawn["resources-chart"]["marks"] >= 4, f"mixed: resources chart {drawn.get('resources-chart')}")
        check(page.render["resources"] == {"trials": 3, "findings": len(texts)}, f"mixed: page resources {page.render.get('resources')}")
        check(page.render["selftest"].get("resources_opened") == 6 and "trial-resources-6" in drawn and
              drawn["trial-resources-6"]["datasets"] == 5 and drawn["trial-resources-6"]["marks"] > 100,
              f"mixed: trial 6's resources chart {drawn.get('trial-resources-6')}")
        check("trial 6: rank 1 on n2 used" in page.full_text, "mixed: the page does not show the findings")

        # --- ASHA through the real coordinator: rungs, promotions, importance at one rung
        asha = sample(os.path.join(work, "asha"), "asha")
        rc, stdout, stderr = run("report", asha, "-o", os.path.join(out, "asha.html"))
        check(rc == 0, f"asha: exit {rc}: {stderr}")
        model = model_of(os.path.join(out, "asha.html"))
        page = render(os.path.join(out, "asha.html"), "asha")
        check_rendered(page, "asha", 24)
        check_sorted_by_best(page, "asha", model)
        check(model["asha"] and len(model["asha"]["rungs"]) == 3, f"asha: rungs {model['asha'] and model['asha']['rungs']}")
        check("code commit fedcba987654 on main" in page.full_text and "(dirty)" not in page.full_text,
              "asha: the page does not show the clean commit (or calls it dirty)")
        check(model["asha"]["rungs"][0]["went_on"] > 0, "asha: nobody went on from rung 0")
        charts = {c["id"] for c in page.render["charts"]}
        check({"asha-chart", "importance-chart", "curves-chart", "best-time-chart", "best-trials-chart"} <= charts,
              f"asha: charts {charts}")
        check("at the same rung" in model["importance"]["basis"] and model["importance"]["scores"],
              f"asha: importance {model['importance']}")
        check(any(t["cuts"] for t in model["trials"]), "asha: no curve cut where the searcher paused a trial")

        # --- PBT: lineage from started_from and the journal's work orders
        pbt = sample(os.path.join(work, "pbt"), "pbt")
        rc, stdout, stderr = run("report", pbt, "-o", os.path.join(out, "pbt.html"))
        check(rc == 0, f"pbt: exit {rc}: {stderr}")
        model = model_of(os.path.join(out, "pbt.html"))
        page = render(os.path.join(out, "pbt.html"), "pbt")
        # Population 4, 3 rounds, int(0.25 x 4) = 1 replaced per round: trials 0-3 and the new
        # trials 4 and 5 (members that go on keep their trial), each a copy of a better one.
        check_rendered(page, "pbt", 6)
        links = model["pbt"]["links"]
        check(len(links) == 2 and all(l["exploit"] for l in links), f"pbt: links {links}")
        check(any(s["id"] == "lineage-svg" for s in page.render["svgs"]), "pbt: no lineage drawn")
        # Where each trial is drawn: from its work orders' tickets, not its id (Determined's
        # numbering: trial 5 is round 2's replacement, not round 1's member 1).
        placed = {p["trial"]: p for p in model["pbt"]["placements"]}
        check(sorted(placed) == list(range(6)), f"pbt: placements {placed}")
        cells = {}
        for p in placed.values():
            for r in range(p["first_round"], p["last_round"] + 1):
                cells.setdefault((r, p["member"]), []).append(p["trial"])
        check(sorted(cells) == [(r, m) for r in range(3) for m in range(4)] and all(len(v) == 1 for v in cells.values()),
              f"pbt: each member of each round is not exactly one trial: {cells}")
        check(all(placed[i]["first_round"] == 0 and placed[i]["member"] == i for i in range(4)),
              f"pbt: round 0 is not trials 0-3 as members 0-3: {placed}")
        check(placed[4]["first_round"] == 1 and placed[5]["first_round"] == 2 and placed[5]["last_round"] == 2,
              f"pbt: replacements 4 and 5 do not start in rounds 1 and 2: {placed}")
        spanning = [i for i in range(4) if placed[i]["last_round"] == 2]
        check(len(spanning) >= 2, f"pbt: fewer than 2 of round 0's members went on to round 2: {placed}")
        bars = page.bars
        check(sorted(bars) == list(range(6)), f"pbt: lineage bars {sorted(bars)}")
        if sorted(bars) == list(range(6)) and spanning:
            for i, bar in bars.items():
                check((bar["first"], bar["last"], bar["member"]) ==
                      (placed[i]["first_round"], placed[i]["last_round"], placed[i]["member"]),
                      f"pbt: trial {i} drawn at {bar}, its work orders place it at {placed[i]}")
            # The geometry: columns are rounds, rows members.
            left = lambda i: bars[i]["x"]
            right = lambda i: bars[i]["x"] + bars[i]["width"]
            whole = spanning[0]  # trained rounds 0, 1 and 2 as one trial
            check(left(whole) == left(0) and right(whole) == right(5),
                  f"pbt: trial {whole} (rounds 0-2) is not drawn from round 0's column to round 2's: {bars}")
            check(left(5) > left(4) > left(0) and right(4) < right(5),
                  f"pbt: replacement 5 is not drawn in round 2's column, right of 4 (round 1): {bars}")
            replaced = [i for i in range(5) if placed[i]["member"] == placed[5]["member"] and i != 5]
            check(len(replaced) >= 1 and all(placed[i]["last_round"] < 2 for i in replaced)
                  and all(bars[i]["y"] == bars[5]["y"] for i in replaced),
                  f"pbt: the trials trial 5 replaced do not end before round 2 on its row: {bars}")
            check(len({bars[i]["y"] for i in range(4)}) == 4, f"pbt: round 0's members share a row: {bars}")

        # --- scale: many trials stay under the size limit and render
        trials, points = map(int, os.environ.get("DLX_REPORT_BIG", "1000 1000").split())
        big = sample(os.path.join(work, "big"), "big", trials, points)
        started = time.monotonic()
        rc, stdout, stderr = run("report", big, "-o", os.path.join(out, "big.html"), "--json")
        seconds = time.monotonic() - started
        check(rc == 0, f"big: exit {rc}: {stderr}")
        size = os.path.getsize(os.path.join(out, "big.html"))
        print(f"# big: {trials} trials x {points} points: {size} bytes in {seconds:.2f} s", flush=True)
        check(size < SIZE_LIMIT, f"big: {size} bytes, over the {SIZE_LIMIT} limit")
        page = render(os.path.join(out, "big.html"), "big")
        check_rendered(page, "big", trials)
        shutil.rmtree(big)

        # --- --watch: an experiment that has ended is written once, without reloading
        rc, stdout, stderr = run("report", asha, "-o", os.path.join(out, "watch-ended.html"), "--watch", "0.5", "--json")
        check(rc == 0 and json.loads(stdout)["writes"] == 1, f"watch, ended: exit {rc}: {stdout} {stderr}")
        check('http-equiv="refresh"' not in open(os.path.join(out, "watch-ended.html")).read(),
              "watch, ended: the final page still reloads itself")
        # ... a running one is rewritten (a new file each time, atomically) until Ctrl-C
        watched = os.path.join(out, "watch.html")
        env = {k: v for k, v in os.environ.items() if k not in ("SLURM_CONF", "DLX_STORAGE_ROOT")}
        process = subprocess.Popen([DLX, "report", mixed, "-o", watched, "--watch", "0.5"], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True, env=env)
        inodes = set()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(inodes) < 3:
            if os.path.exists(watched):
                inodes.add(os.stat(watched).st_ino)
                text = open(watched).read()
                check(text.endswith("</html>\n"), "watch: a reader saw a partial page")
                check('<meta http-equiv="refresh" content="1">' in text, "watch: the page does not reload itself")
                check('"watch_seconds":0.5' in text, "watch: the page does not say it is being watched")
            time.sleep(0.1)
        check(len(inodes) >= 3, f"watch: the page was not rewritten ({len(inodes)} versions seen)")
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=30)
        check(process.returncode == 0, f"watch: exit {process.returncode} after SIGINT: {stderr}")
        check('http-equiv="refresh"' not in open(watched).read(), "watch: the last page still reloads itself")
        check(leftovers(out) == [], f"watch: temporary files left: {leftovers(out)}")

        # --- refusals: what, where, how to fix; nothing written
        def refused(name, args, words, output=None):
            rc, stdout, stderr = run("report", *args)
            check(rc != 0, f"{name}: exit 0")
            for word in words:
                check(word in stderr, f"{name}: '{word}' not in the message: {stderr.strip()}")
            if output:
                check(not os.path.exists(output), f"{name}: {output} was written")
            check(leftovers(out) == [], f"{name}: temporary files left: {leftovers(out)}")

        target = os.path.join(out, "refused.html")
        refused("missing directory", [os.path.join(work, "nope"), "-o", target], ["no such directory", "experiment directory"], target)
        os.makedirs(os.path.join(work, "foreign"))
        refused("foreign directory", [os.path.join(work, "foreign"), "-o", target],
                ["is not an experiment directory", "experiment.yaml"], target)
        refused("no such -o directory", [mixed, "-o", os.path.join(work, "no", "where.html")],
                ["cannot write the report", "does not exist", "-o"])
        refused("-o a directory", [mixed, "-o", out], ["cannot write the report", "is a directory"])
        refused("bad --watch", [mixed, "-o", target, "--watch", "0"], ["--watch"], target)
        if os.geteuid() != 0:
            locked = os.path.join(work, "locked")
            os.makedirs(locked, mode=0o500)
            refused("unwritable -o", [mixed, "-o", os.path.join(locked, "r.html")], ["you may not write", "-o"])
        import h5py  # noqa: E402  (Debian's python3-h5py: /usr/bin/python3)
        newer = os.path.join(work, "newer")
        shutil.copytree(mixed, newer)
        with h5py.File(os.path.join(newer, "trials", "2", "trial.h5"), "r+") as f:
            f.attrs["format_version"] = 99
        refused("newer trial.h5", [newer, "-o", target], ["trial 2", "format_version 99 is newer", "upgrade dlx"], target)
    finally:
        shutil.rmtree(work, ignore_errors=True)


main()
if failures:
    print(f"{len(failures)} failures")
    sys.exit(1)
print("all passed")
