#!/usr/bin/env python3
"""The table of tools/bench/clock_sweep.sh: for each CTA count, the cycles per tile with the SM
clock locked to base and at the GPU's own clock, that clock, and the launch's duration, from the
Nsight Compute CSVs OUT_DIR/ctas<C>_base.csv and ctas<C>_none.csv. Cycles per tile are the
launch's SM cycles x C / tiles (each CTA's share of the tiles, in cycles).

  clock_sweep.py OUT_DIR --seq S --heads H --batch B --bm BM --ctas C1,C2,..
"""
import argparse
import os
import sys

import ncu_csv

METRICS = ("gpu__time_duration.sum", "sm__cycles_elapsed.max", "sm__cycles_elapsed.avg.per_second")


def read_metrics(path):
    """The metric values of the CSV's one profiled kernel, in base units (ncu_csv)."""
    kernels = ncu_csv.read_kernels(path, METRICS, "clock_sweep.py")
    if len(kernels) != 1:
        sys.exit(f"clock_sweep.py: {path}: {len(kernels)} kernels profiled, not 1")
    return kernels[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir")
    for flag in ("--seq", "--heads", "--batch", "--bm"):
        ap.add_argument(flag, type=int, required=True)
    ap.add_argument("--ctas", required=True)
    a = ap.parse_args()
    if min(a.seq, a.heads, a.batch, a.bm) <= 0:
        sys.exit("clock_sweep.py: --seq, --heads, --batch and --bm must be positive")
    try:
        ctas = [int(c) for c in a.ctas.split(",")]
    except ValueError:
        sys.exit(f"clock_sweep.py: --ctas must be a comma-separated list of integers, not {a.ctas!r}")
    tiles = -(-a.seq // a.bm) * a.heads * a.batch
    print(f"{tiles} tiles (seq {a.seq}, BM {a.bm}, {a.heads} heads, batch {a.batch}), dense, tile scheduler\n")
    print("| CTAs | k cycles per tile, base clock | base clock (GHz) | k cycles per tile, own clock "
          "| own clock (GHz) | duration, own clock (us) |")
    print("|---:|---:|---:|---:|---:|---:|")
    for c in ctas:
        base = read_metrics(os.path.join(a.out_dir, f"ctas{c}_base.csv"))
        own = read_metrics(os.path.join(a.out_dir, f"ctas{c}_none.csv"))
        per_tile = lambda m: m["sm__cycles_elapsed.max"] * c / tiles / 1e3
        print(f"| {c} | {per_tile(base):.1f} | {base['sm__cycles_elapsed.avg.per_second'] / 1e9:.3f} "
              f"| {per_tile(own):.1f} | {own['sm__cycles_elapsed.avg.per_second'] / 1e9:.3f} "
              f"| {own['gpu__time_duration.sum'] * 1e6:.1f} |")


if __name__ == "__main__":
    main()
