#!/usr/bin/env python3
"""Before/after wall-clock comparison of two rtvmm binaries.

Usage: python3 tools/abbench.py BEFORE_BIN AFTER_BIN [POLICIES] [RUNS]

Times `rtvmm demo --policy P --duration 300s` (process start and task-set drawing
included) for each policy, the two binaries alternating run by run so that a machine
whose speed drifts affects both alike, and prints per policy the median with its range
and the ratio after/before. POLICIES is a comma-separated list (default: all ten), RUNS
the runs per binary and policy (default 9).
"""
import statistics
import subprocess
import sys
import time

ALL = "deferrable,periodic,polling,sporadic,wcps,crps,credit,sedf,rtds,arinc653"


def main() -> None:
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    bins = {"before": sys.argv[1], "after": sys.argv[2]}
    policies = (sys.argv[3] if len(sys.argv) > 3 else ALL).split(",")
    runs = int(sys.argv[4]) if len(sys.argv) > 4 else 9
    seconds = {}
    for policy in policies:
        for run in range(runs):
            order = list(bins.items()) if run % 2 == 0 else list(reversed(bins.items()))
            for name, binary in order:
                start = time.perf_counter()
                subprocess.run(
                    [binary, "demo", "--policy", policy, "--duration", "300s"],
                    stdout=subprocess.DEVNULL,
                    check=True,
                )
                seconds.setdefault((policy, name), []).append(time.perf_counter() - start)
    print(f"{'policy':10} {'before ms: median (min-max)':>28} {'after ms: median (min-max)':>28}"
          f" {'after/before':>12} {'after: simulated/wall':>22}")
    for policy in policies:
        b, a = seconds[(policy, "before")], seconds[(policy, "after")]
        mb, ma = statistics.median(b), statistics.median(a)
        print(f"{policy:10} {mb * 1e3:9.1f} ({min(b) * 1e3:.1f}-{max(b) * 1e3:.1f}){'':6}"
              f" {ma * 1e3:9.1f} ({min(a) * 1e3:.1f}-{max(a) * 1e3:.1f}){'':6}"
              f" {ma / mb:12.2f} {300 / ma:22.0f}")


if __name__ == "__main__":
    main()
