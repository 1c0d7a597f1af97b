#!/usr/bin/env python3
"""The multicore benchmark's 16 global-EDF components through CARTS, timed and compared.

Usage:
    cargo bench -p rtvmm-analysis --bench interface -- multiprocessor/system 2> bench.txt
    python3 tools/carts_multicore.py bench.txt CARTS_JAR [WORKDIR]

The bench prints each component once (`component poolP/dD: p e; p e; ... | MPR (Π, Θ, m′)
| DMPR (Π, Θ_total, m′) | ...`, DMPR in CARTS's form). For each period P in 1..=100 and
each of CARTS's models `MPR2` and `DMPR`, this writes one CARTS system file holding all 16
components at period P and runs `java -jar CARTS_JAR in.xml MODEL out.xml` once (a JVM
start per run, as CARTS is used); over the 100 periods it keeps, per component, CARTS's
interface of least bandwidth (ties: fewer VCPUs, then the smaller period — rtvmm's rule)
and prints the total time per model and every component whose interface differs from
rtvmm's. `docs/benchmarks.md` ("Many pcpus: a 4-pool, 16-domain system") records a run.
"""
import os
import re
import subprocess
import sys
import time
from fractions import Fraction

LINE = re.compile(
    r"component (\S+): (.*?) \| MPR \((\d+), (\d+), (\d+)\) \| DMPR \((\d+), (\d+), (\d+)\)"
)


def main() -> None:
    bench, jar = sys.argv[1], os.path.abspath(sys.argv[2])
    workdir = sys.argv[3] if len(sys.argv) > 3 else "."
    components = []  # (name, [(p, e)], rtvmm's MPR, rtvmm's DMPR)
    for line in open(bench):
        m = LINE.match(line)
        if m:
            tasks = [tuple(map(int, t.split())) for t in m.group(2).split(";")]
            mpr = tuple(map(int, m.group(3, 4, 5)))
            dmpr = tuple(map(int, m.group(6, 7, 8)))
            components.append((m.group(1).replace("/", "_"), tasks, mpr, dmpr))
    if len(components) != 16:
        sys.exit(f"{bench}: {len(components)} components, expected 16")
    os.chdir(workdir)
    best = {"MPR2": {}, "DMPR": {}}
    seconds = {"MPR2": 0.0, "DMPR": 0.0}
    no_interface = {"MPR2": 0, "DMPR": 0}
    for period in range(1, 101):
        xml = f'<system os_scheduler="gEDF" period="{period}">\n'
        for name, tasks, _, _ in components:
            xml += f'<component name="{name}" scheduler="gEDF" period="{period}">\n'
            for j, (p, e) in enumerate(tasks):
                xml += (
                    f'<task name="T{j}" p="{p}" d="{p}" e="{e}" delta_rel="0" '
                    'delta_sch="0" delta_cxs="0" delta_crpmd="0"></task>\n'
                )
            xml += "</component>\n"
        xml += "</system>\n"
        with open("in.xml", "w") as f:
            f.write(xml)
        for model in ("MPR2", "DMPR"):
            if os.path.exists("out.xml"):
                os.remove("out.xml")
            started = time.time()
            subprocess.run(
                ["timeout", "300", "java", "-Djava.awt.headless=true", "-jar", jar,
                 "in.xml", model, "out.xml"],
                capture_output=True,
                text=True,
            )
            seconds[model] += time.time() - started
            out = open("out.xml").read() if os.path.exists("out.xml") else ""
            for name, _, _, _ in components:
                found = re.findall(
                    r'<component name="' + name + r'".*?<model cpus="(\d+)" '
                    r'period="([\d.E]+)" execution_time="([\d.E]+)"',
                    out,
                    re.S,
                )
                if not found or found[0][0] == "0":
                    no_interface[model] += 1
                    continue
                cpus, per, budget = int(found[0][0]), int(float(found[0][1])), int(float(found[0][2]))
                key = (Fraction(budget, per), cpus, per)
                if name not in best[model] or key < best[model][name][0]:
                    best[model][name] = (key, (per, budget, cpus))
        print(f"P={period}: MPR2 {seconds['MPR2']:.1f} s, DMPR {seconds['DMPR']:.1f} s", flush=True)
    same = 0
    for name, _, mpr, dmpr in components:
        for model, ours in (("MPR2", mpr), ("DMPR", dmpr)):
            theirs = best[model].get(name, (None, None))[1]
            if theirs == ours:
                same += 1
            else:
                print(f"differs: {name} {model}: rtvmm {ours}, CARTS {theirs}")
    print(
        f"same {same} of 32; CARTS seconds {seconds}; "
        f"(component, period) runs without an interface {no_interface}"
    )


if __name__ == "__main__":
    main()
