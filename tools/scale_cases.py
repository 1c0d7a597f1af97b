#!/usr/bin/env python3
"""Writes the scale cases of issue 23 (docs/benchmarks.md, "Scale") into a directory.

Usage: python3 tools/scale_cases.py DIR [N]

N (default 100000) is the number of tasks (case 2), domains (case 3) and CARTS
components (case 4); case 5 has 30,000 distinct periods. Files:
  case1-POLICY.toml  64 pcpus, 64 domains of two VCPUs (2 ms / 10 ms, priorities 1-16),
                     two RM tasks each; POLICY = crps, wcps, periodic, deferrable, polling,
                     sporadic
  case2.toml         one domain (Deferrable, 9 ms / 10 ms) of N tasks of 1 us every
                     100-999 ms
  case3.toml         N one-VCPU domains (1 us / 1 s, priorities cycling 1-100), one task each
  case4.xml          a CARTS file of N components of one EDF task each
  case4-short.xml    the same with N/2 periods 50,000-99,999 above N/2 of 10,000,000 and
                     more (the root's sums past the shorter periods)
  case5.toml         one EDF domain of 30,000 tasks with distinct periods (analyse it with
                     --quantum 1us)
The simulator's cases run with `rtvmm sim FILE --duration 1s`, the analysis's with
`rtvmm analyze FILE`.
"""
import os
import sys


def main() -> None:
    out = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 100_000
    os.makedirs(out, exist_ok=True)

    def write(name: str, parts: list) -> None:
        with open(os.path.join(out, name), "w") as f:
            f.write("".join(parts))

    for policy in ["crps", "wcps", "periodic", "deferrable", "polling", "sporadic"]:
        s = [f'name = "wide"\nduration = "1s"\nseed = 1\n[machine]\npcpus = 64\n'
             f'[scheduler]\npolicy = "{policy}"\n']
        for d in range(64):
            s.append(f'[[domain]]\nname = "d{d}"\nvcpus = 2\n'
                     f'vcpu = {{ budget = "2ms", period = "10ms", priority = {d % 16 + 1} }}\n')
            for t in range(2):
                s.append(f'[[domain.task]]\nname = "t{t}"\nperiod = "{20 + 10 * t}ms"\n'
                         f'wcet = "1ms"\noffset = "{d * 37 % 1000}us"\n')
        write(f"case1-{policy}.toml", s)
    s = ['name = "tasks"\nduration = "1s"\nseed = 1\n[scheduler]\npolicy = "deferrable"\n'
         '[[domain]]\nname = "d"\nvcpu = { budget = "9ms", period = "10ms" }\n']
    for t in range(n):
        s.append(f'[[domain.task]]\nname = "t{t}"\nperiod = "{100 + t % 900}ms"\nwcet = "1us"\n')
    write("case2.toml", s)
    s = ['name = "doms"\nduration = "1s"\nseed = 1\n[scheduler]\npolicy = "deferrable"\n']
    for d in range(n):
        s.append(f'[[domain]]\nname = "d{d}"\n'
                 f'vcpu = {{ budget = "1us", period = "1s", priority = {d % 100 + 1} }}\n'
                 '[[domain.task]]\nname = "t"\nperiod = "1s"\nwcet = "100ns"\n')
    write("case3.toml", s)
    s = ['<?xml version="1.0" encoding="UTF-8"?>\n<system os_scheduler="EDF">\n']
    for c in range(n):
        s.append(f'  <component name="c{c}" scheduler="EDF">\n'
                 f'    <task name="t" p="{100_000 + c}" e="1"/>\n  </component>\n')
    s.append("</system>\n")
    write("case4.xml", s)
    s = ['<?xml version="1.0" encoding="UTF-8"?>\n<system os_scheduler="EDF">\n']
    for c in range(n // 2):
        s.append(f'  <component name="h{c}" scheduler="EDF">\n'
                 f'    <task name="t" p="{50_000 + c}" e="1"/>\n  </component>\n')
    for c in range(n - n // 2):
        s.append(f'  <component name="l{c}" scheduler="EDF">\n'
                 f'    <task name="t" p="{10_000_000 + c}" e="1"/>\n  </component>\n')
    s.append("</system>\n")
    write("case4-short.xml", s)
    s = ['name = "periods"\nduration = "1s"\nseed = 1\n[scheduler]\npolicy = "deferrable"\n'
         '[[domain]]\nname = "d"\nguest = "edf"\nvcpu = { budget = "9ms", period = "10ms" }\n']
    for t in range(30_000):
        s.append(f'[[domain.task]]\nname = "t{t}"\nperiod = "{1_000_000 + t}us"\nwcet = "1ns"\n')
    write("case5.toml", s)


if __name__ == "__main__":
    main()
