#!/usr/bin/env python3
"""Side-by-side figures from Nsight Compute exports (tools/bench/ncu_compare.sh writes them): for
each PREFIX, PREFIX_raw.csv (`ncu --page raw --csv`) and, if present, PREFIX_sass.csv (`ncu --page
source --csv --print-source sass`). Prints Markdown: the kernels' time, clock, tensor-pipe use,
issue activity and instruction counts, the warp stall reasons (warps stalled per issued
instruction), and from the SASS export the executed instructions by opcode.

  python3 tools/bench/ncu_summary.py out/ours out/cudnn out/fa4
"""
import csv
import os
import re
import sys

# (label, metric name or regex over the raw export's columns)
FIGURES = [
    ("duration (us)", "gpu__time_duration.sum"),
    ("SM clock (cycles / ns)", "sm__cycles_elapsed.avg.per_second"),
    ("SM cycles", "sm__cycles_elapsed.max"),
    ("grid", "launch__grid_size"),
    ("threads per CTA", "launch__block_size"),
    ("registers per thread", "launch__registers_per_thread"),
    ("dynamic shared bytes", "launch__shared_mem_per_block_dynamic"),
    ("tensor pipe active (% of peak)", re.compile(r"^sm__pipe_tensor_op_[hg]mma_cycles_active\.avg\.pct_of_peak_sustained_active$")),
    ("issue slots busy (%)", "smsp__issue_active.avg.pct_of_peak_sustained_active"),
    ("instructions executed", "smsp__inst_executed.sum"),
    ("L2 hit rate (%)", "lts__t_sector_hit_rate.pct"),
    ("DRAM bytes read", "dram__bytes_read.sum"),
]
STALL = re.compile(r"^smsp__average_warps_issue_stalled_(\w+?)_per_issue_active\.ratio$")


def read_raw(path):
    with open(path, newline="") as f:
        rows = [r for r in csv.reader(f) if r]
    # A header row, a units row, then one row per profiled kernel: the last kernel's.
    header = rows[0]
    units = rows[1] if len(rows) > 2 else [""] * len(header)
    return header, units, rows[-1]


def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def figure(header, units, row, key):
    for i, name in enumerate(header):
        if (key.match(name) if isinstance(key, re.Pattern) else name == key):
            unit = units[i] if i < len(units) else ""
            return row[i] + (f" {unit}" if unit and unit not in ("%",) else ""), name
    return "-", None


def opcodes(path):
    """Executed warp-level instructions by opcode from a per-instruction SASS export."""
    with open(path, newline="") as f:
        lines = list(csv.reader(f))
    start = next((i for i, r in enumerate(lines) if "Source" in r), None)
    if start is None:
        return {}
    header = lines[start]
    src = header.index("Source")
    col = next((i for i, h in enumerate(header) if h.startswith("Instructions Executed")), None)
    if col is None:
        return {}
    counts = {}
    for r in lines[start + 1:]:
        if len(r) <= max(src, col):
            continue
        n = number(r[col])
        if n is None:
            continue
        text = r[src].strip()
        text = re.sub(r"^@!?U?P\w+\s+", "", text)  # a predicate guard
        op = text.split(" ")[0].split(".")[0] if text else "?"
        counts[op] = counts.get(op, 0) + n
    return counts


def main():
    prefixes = sys.argv[1:]
    if not prefixes:
        sys.exit("usage: ncu_summary.py PREFIX [PREFIX...] (PREFIX_raw.csv from ncu --page raw --csv)")
    names = [os.path.basename(p) for p in prefixes]
    raws = []
    for p in prefixes:
        path = p + "_raw.csv"
        if not os.path.exists(path):
            sys.exit(f"ncu_summary.py: {path} does not exist")
        raws.append(read_raw(path))
    print("| figure | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    print("| kernel | " + " | ".join(figure(*r, "Kernel Name")[0][:60] for r in raws) + " |")
    for label, key in FIGURES:
        print(f"| {label} | " + " | ".join(figure(*r, key)[0] for r in raws) + " |")
    # Stall reasons, largest first by the first kernel.
    reasons = {}
    for k, (header, _, row) in enumerate(raws):
        for i, name in enumerate(header):
            m = STALL.match(name)
            if m and number(row[i]) is not None:
                reasons.setdefault(m.group(1), [None] * len(raws))[k] = number(row[i])
    print()
    print("| warps stalled per issued instruction | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for reason, values in sorted(reasons.items(), key=lambda kv: -(kv[1][0] or 0)):
        if max(v or 0 for v in values) < 0.01:
            continue
        print(f"| {reason} | " + " | ".join("-" if v is None else f"{v:.2f}" for v in values) + " |")
    mixes = [opcodes(p + "_sass.csv") if os.path.exists(p + "_sass.csv") else {} for p in prefixes]
    if any(mixes):
        print()
        print("| executed instructions (millions) | " + " | ".join(names) + " |")
        print("|---|" + "---|" * len(names))
        ops = sorted({op for m in mixes for op in m}, key=lambda op: -max(m.get(op, 0) for m in mixes))
        for op in ops[:40]:
            print(f"| {op} | " + " | ".join(f"{m.get(op, 0) / 1e6:.2f}" for m in mixes) + " |")
        print("| all | " + " | ".join(f"{sum(m.values()) / 1e6:.2f}" for m in mixes) + " |")


if __name__ == "__main__":
    main()
