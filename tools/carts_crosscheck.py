#!/usr/bin/env python3
"""Cross-checks `rtvmm analyze` against CARTS on random components (not run in CI).

Usage:
  python3 tools/carts_crosscheck.py --carts-jar PATH/carts.jar [--rtvmm target/release/rtvmm]
      [-n 50] [--seed 1] [--models MPR2,DMPR,PRM] [--keep DIR] [--timeout 120]

For each of N random components it writes one CARTS input file of its own (rtvmm's
examples are not used) and runs, per model:
  MPR2, DMPR  a gEDF component of 2-6 tasks (U 0.4-2.6, some deadlines below the period) at
              one fixed period (CARTS's MPR2 and DMPR take one period per component):
              `java -jar carts.jar IN.xml MPR2|DMPR OUT.xml` against
              `rtvmm analyze IN.xml --model mpr|dmpr --json`; compared: CARTS's
              <model cpus= execution_time=> of the component with rtvmm's
              carts_cpus / carts_execution_time.
  PRM         an RM or EDF component of 1-5 tasks (U 0.1-0.8) over a range of 2-12 periods:
              `java -jar carts.jar IN.xml PRM OUT.xml` against
              `rtvmm analyze IN.xml --table --sbf general --json`; compared: every period's
              budget (CARTS's <processed_task> rows) with rtvmm's row at that period.
CARTS's PRM model opens a progress window even from the command line: without a DISPLAY
the script runs it under `xvfb-run -a` (Debian package xvfb). It prints one line per
mismatch or CARTS failure and a summary per model; the exit code is 1 when any interface
differs. Deterministic for a given seed.
"""
import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET


def gedf_component(rng: random.Random, index: int) -> str:
    n = rng.randint(2, 6)
    target = rng.uniform(0.4, 2.6)
    shares = [rng.random() for _ in range(n)]
    total = sum(shares)
    tasks = []
    for k, share in enumerate(shares):
        p = rng.randint(20, 200)
        u = min(0.95, target * share / total)
        e = max(1, round(u * p))
        d = p if rng.random() < 0.7 else rng.randint(max(e, p // 2), p)
        tasks.append(f'    <task name="t{k}" p="{p}" d="{d}" e="{e}"/>\n')
    period = rng.randint(5, 50)
    return (f'<system os_scheduler="gEDF" period="{period}">\n'
            f'  <component name="c{index}" scheduler="gEDF" period="{period}">\n'
            + "".join(tasks) + "  </component>\n</system>\n")


def prm_component(rng: random.Random, index: int) -> str:
    n = rng.randint(1, 5)
    target = rng.uniform(0.1, 0.8)
    shares = [rng.random() for _ in range(n)]
    total = sum(shares)
    tasks = []
    for k, share in enumerate(shares):
        p = rng.randint(10, 120)
        e = max(1, round(target * share / total * p))
        d = p if rng.random() < 0.8 else rng.randint(max(e, p // 2), p)
        tasks.append(f'    <task name="t{k}" p="{p}" d="{d}" e="{e}"/>\n')
    scheduler = rng.choice(["RM", "EDF"])
    low = rng.randint(2, 15)
    high = low + rng.randint(1, 11)
    return (f'<system os_scheduler="{scheduler}">\n'
            f'  <component name="c{index}" scheduler="{scheduler}" min_period="{low}" '
            f'max_period="{high}">\n' + "".join(tasks) + "  </component>\n</system>\n")


def run_carts(args, model: str, path: str, out: str):
    command = ["java", "-Djava.awt.headless=false", "-jar", args.carts_jar, path, model, out]
    if model == "PRM" and not os.environ.get("DISPLAY"):
        if not shutil.which("xvfb-run"):
            return None, "CARTS's PRM model needs a display: install xvfb (xvfb-run)"
        command = ["xvfb-run", "-a"] + command
    # Its own process group, so that a timeout ends java and Xvfb too, not only xvfb-run.
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, start_new_session=True)
    try:
        stdout, stderr = process.communicate(timeout=args.timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        return None, f"CARTS timed out after {args.timeout} s"
    if not os.path.exists(out):
        return None, (stderr or stdout).strip().splitlines()[-1:] or ["no output"]
    try:
        return ET.parse(out).getroot(), None
    except ET.ParseError as error:
        return None, f"CARTS output unreadable: {error}"


def carts_component(root, name: str):
    for component in root.iter("component"):
        if component.get("name") == name:
            return component
    return None


def run_rtvmm(args, path: str, flags):
    out = path + ".rtvmm.json"
    done = subprocess.run([args.rtvmm, "analyze", path, *flags, "--json", out],
                          capture_output=True, text=True, timeout=args.timeout)
    if done.returncode != 0:
        return None, done.stderr.strip()
    with open(out) as f:
        return json.load(f), None


def check_multiprocessor(args, model: str, path: str, name: str):
    """None when equal; else a description."""
    root, error = run_carts(args, model, path, path + f".{model}.out.xml")
    if root is None:
        return "carts-failed", error
    component = carts_component(root, name)
    found = component.find("resource/model") if component is not None else None
    if found is None:
        return "carts-failed", "no <resource><model> for the component"
    carts = (int(float(found.get("cpus"))), int(float(found.get("period"))),
             int(float(found.get("execution_time"))))
    flag = "mpr" if model == "MPR2" else "dmpr"
    report, error = run_rtvmm(args, path, ["--model", flag])
    if report is None:
        return "differs", f"rtvmm failed: {error}; CARTS (cpus, Π, Θ) = {carts}"
    best = report["components"][0]["best"]
    if best is None:
        return "differs", f"rtvmm: no interface ({report['components'][0]['failure']}); CARTS {carts}"
    ours = (best["carts_cpus"], best["period"], best["carts_execution_time"])
    if ours != carts:
        return "differs", f"CARTS (cpus, Π, Θ) = {carts}, rtvmm {ours}"
    return "equal", None


def check_prm(args, path: str, name: str):
    root, error = run_carts(args, "PRM", path, path + ".PRM.out.xml")
    if root is None:
        return "carts-failed", error
    component = carts_component(root, name)
    if component is None:
        return "carts-failed", "component missing from CARTS's output"
    carts = {int(float(m.get("period"))): int(float(m.get("execution_time")))
             for m in component.findall("processed_task/model")}
    report, error = run_rtvmm(args, path, ["--table", "--sbf", "general"])
    if report is None:
        return "differs", f"rtvmm failed: {error}"
    ours = {row["period"]: (row["interface"] or {}).get("budget")
            for row in report["components"][0]["rows"]}
    wrong = [(p, carts[p], ours.get(p)) for p in sorted(carts) if ours.get(p) != carts[p]]
    if not carts:
        return "carts-failed", "CARTS printed no period"
    if wrong:
        return "differs", "periods (Π, CARTS Θ, rtvmm Θ): " + ", ".join(map(str, wrong))
    return "equal", None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--carts-jar", required=True)
    parser.add_argument("--rtvmm", default="target/release/rtvmm")
    parser.add_argument("-n", type=int, default=50)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--models", default="MPR2,DMPR,PRM")
    parser.add_argument("--keep", help="write the inputs and outputs here (default: a temp dir)")
    parser.add_argument("--timeout", type=int, default=120)
    args = parser.parse_args()
    models = [m.strip().upper() for m in args.models.split(",") if m.strip()]
    work = args.keep or tempfile.mkdtemp(prefix="carts-crosscheck-")
    os.makedirs(work, exist_ok=True)
    rng = random.Random(args.seed)
    counts = {m: {"equal": 0, "differs": 0, "carts-failed": 0} for m in models}
    started = time.time()
    for i in range(args.n):
        gedf = gedf_component(rng, i)
        prm = prm_component(rng, i)
        for model in models:
            path = os.path.join(work, f"c{i}-{model}.xml")
            with open(path, "w") as f:
                f.write(prm if model == "PRM" else gedf)
            if model == "PRM":
                outcome, detail = check_prm(args, path, f"c{i}")
            else:
                outcome, detail = check_multiprocessor(args, model, path, f"c{i}")
            counts[model][outcome] += 1
            if outcome != "equal":
                print(f"{model} c{i} ({path}): {outcome}: {detail}", flush=True)
    elapsed = time.time() - started
    print(f"{args.n} components per model, seed {args.seed}, {elapsed:.0f} s; files in {work}")
    for model in models:
        c = counts[model]
        answered = c["equal"] + c["differs"]
        print(f"  {model}: {c['equal']} equal of {answered} that CARTS answered "
              f"({c['differs']} differ, {c['carts-failed']} CARTS failures)")
    return 1 if any(c["differs"] for c in counts.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
