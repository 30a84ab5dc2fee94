#!/usr/bin/env python3
"""B / A per benchmark point from the rounds tools/bench/ab_bench.sh wrote (OUT/a1.json,
OUT/b1.json, ...): TFLOP/s of each round, the ratio of the rounds' means, and each side's spread
between rounds ((max - min) / mean), as a Markdown table.

  python3 tools/bench/ab_compare.py OUT_DIR
"""
import glob
import json
import os
import re
import statistics
import sys


def rounds(out, side):
    files = sorted(glob.glob(os.path.join(out, f"{side}[0-9]*.json")),
                   key=lambda f: int(re.findall(r"(\d+)\.json$", f)[0]))
    result = []
    for f in files:
        with open(f) as fh:
            result.append({(r["d"], r["seq"], r["causal"]): r for r in json.load(fh)["rows"]})
    return result


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: ab_compare.py OUT_DIR")
    out = sys.argv[1]
    a, b = rounds(out, "a"), rounds(out, "b")
    if not a or not b:
        sys.exit(f"ab_compare.py: {out} has no a*.json or b*.json rounds")
    print("| d | seq | mask | A TFLOP/s (rounds) | B TFLOP/s (rounds) | B / A | A spread | B spread |")
    print("|---|---|---|---|---|---|---|---|")
    for key in sorted(a[0]):
        ta = [r[key]["tflops"] for r in a if key in r]
        tb = [r[key]["tflops"] for r in b if key in r]
        if not ta or not tb:
            continue
        ma, mb = statistics.mean(ta), statistics.mean(tb)
        spread = lambda t, m: (max(t) - min(t)) / m
        d, seq, causal = key
        print(f"| {d} | {seq} | {'C' if causal else 'D'} | {', '.join(f'{t:.1f}' for t in ta)} | "
              f"{', '.join(f'{t:.1f}' for t in tb)} | **{mb / ma:.3f}** | {spread(ta, ma):.3f} | "
              f"{spread(tb, mb):.3f} |")


if __name__ == "__main__":
    main()
