#!/usr/bin/env python3
"""Measures what one simulation step costs, per policy, to check the long-run estimate's
weights (docs/benchmarks.md, "What a step costs").

Usage: python3 tools/step_weights.py RTVMM DIR POLICIES SYSTEMS

RTVMM is a release binary, DIR a directory for the scenario files, POLICIES a
comma-separated list (deferrable,credit,rtds,...), SYSTEMS a comma-separated list of:
  Bn  n one-VCPU domains on one pcpu sharing half of it (periods of 10 ms or more, one
      task each)
  An  n idle one-VCPU domains on one pcpu (one 100 ns job a second each)
  Cp  p pcpus in one pool, 2p domains of two VCPUs (2 ms every 10 ms), one task each
For each system and policy: the steps a simulated second takes by the estimate (read from
the long-run announcement of a 100,000 s run, stopped at once), the CPU time (`perf stat -e
task-clock`, best of two) of 1 s and 3 s simulated, and from their difference what a step
costs and its weight (that cost over 66.7 ns, the 15 million steps a second the estimate
assumes). Needs `perf`.
"""
import os
import re
import subprocess
import sys

EDF_LIKE = ("rtds", "sedf", "sedf-ideal", "credit")
UNITS = {None: 1, "million": 1e6, "billion": 1e9, "trillion": 1e12}


def vcpu(policy: str, budget: str, period: str, priority: int) -> str:
    if policy in EDF_LIKE:
        return f'vcpu = {{ budget = "{budget}", period = "{period}" }}'
    return f'vcpu = {{ budget = "{budget}", period = "{period}", priority = {priority} }}'


def domain(name: str, head: str, period: str, wcet: str) -> str:
    return (
        f'[[domain]]\nname = "{name}"\n{head}\n'
        f'[[domain.task]]\nname = "t"\nperiod = "{period}"\nwcet = "{wcet}"\n'
    )


def system(name: str, policy: str) -> str:
    kind, n = name[0], int(name[1:])
    text = ['name = "weights"\nduration = "1s"\nseed = 1\n']
    if kind == "C":
        text.append(f"[machine]\npcpus = {n}\n")
    text.append(f'[scheduler]\npolicy = "{policy}"\n')
    if kind == "A":
        for d in range(n):
            text.append(domain(f"d{d}", vcpu(policy, "10us", "1s", d % 100 + 1), "1s", "100ns"))
    elif kind == "B":
        period = 10_000 * max(1, n // 100)  # µs
        budget = period // (2 * n)
        for d in range(n):
            head = vcpu(policy, f"{budget}us", f"{period}us", d % 100 + 1)
            text.append(domain(f"d{d}", head, f"{period}us", f"{max(1, budget // 2)}us"))
    elif kind == "C":
        for d in range(2 * n):
            head = "vcpus = 2\n" + vcpu(policy, "2ms", "10ms", d % 16 + 1)
            text.append(domain(f"d{d}", head, "20ms", "1ms"))
    else:
        sys.exit(f"unknown system {name!r}: An, Bn or Cp")
    return "".join(text)


def steps_per_second(rtvmm: str, path: str) -> float:
    err = subprocess.run(
        ["timeout", "3", rtvmm, "sim", path, "--duration", "100000s"],
        capture_output=True,
        text=True,
    ).stderr
    m = re.search(r"about ([\d.]+)\s*(million|billion|trillion)? simulation steps", err)
    if not m:
        return float("nan")
    return float(m.group(1)) * UNITS[m.group(2)] / 100_000


def cpu_seconds(rtvmm: str, path: str, duration: str) -> float:
    run = subprocess.run(
        ["perf", "stat", "-x,", "-e", "task-clock", rtvmm, "sim", path, "--duration", duration],
        capture_output=True,
        text=True,
    )
    for line in run.stderr.splitlines():
        if "task-clock" in line:
            return float(line.split(",")[0]) / 1e3
    sys.exit(f"{path}: {run.stderr[:300]}")


def main() -> None:
    rtvmm, out, policies, systems = sys.argv[1:5]
    os.makedirs(out, exist_ok=True)
    for name in systems.split(","):
        for policy in policies.split(","):
            path = os.path.join(out, f"{name}-{policy}.toml")
            if not os.path.exists(path):
                with open(path, "w") as f:
                    f.write(system(name, policy))
            steps = steps_per_second(rtvmm, path)
            if steps != steps:
                print(f"{name:8} {policy:11} refused or short: see `rtvmm check {path}`")
                continue
            one = min(cpu_seconds(rtvmm, path, "1s") for _ in range(2))
            three = min(cpu_seconds(rtvmm, path, "3s") for _ in range(2))
            per_step = (three - one) / (2 * steps)
            print(
                f"{name:8} {policy:11} steps/s {steps:10.0f}  cpu(1s) {one * 1e3:8.1f} ms  "
                f"per step {per_step * 1e9:7.0f} ns  weight {per_step * 15e6:6.1f}  "
                f"set-up {(one - steps * per_step) * 1e3:7.1f} ms",
                flush=True,
            )


if __name__ == "__main__":
    main()
