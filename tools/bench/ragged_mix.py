#!/usr/bin/env python3
"""The ragged causal mix beside the benchmark grid: one `tilesched run` (kernel, measured trace,
check against the simulator) per head dim and scheduler on a batch of very unequal sequences.
Runs on the device machine.

  python3 tools/bench/ragged_mix.py --tilesched BIN --out DIR [--head-dims 64,128,256]
                                    [--schedulers queued,lpt_queued,planned]

Reports each run's traced makespan (first tile start to last tile end of one launch, trace
recording on), the simulator's prediction, TFLOP/s on the causal FLOPs (4 d H_q times the
visible (query, key) pairs, docs/spec.md §9) and the check's verdicts; writes DIR/ragged.md and
DIR/ragged.json (each written to a temporary file first, then renamed). Exits non-zero when a
run fails or its check does not pass.
"""
import argparse
import json
import os
import re
import subprocess
import sys

from atomic_file import write_atomic
from gpu_bench import attention_flops  # the FLOP count of the grid's tables

# Lengths from 128 to 16384 in no order (the scheduler sees them as given), 32 query heads
# sharing 8 KV heads.
LENGTHS = [16384, 128, 8192, 256, 4096, 512, 2048, 1024, 3000, 700]
Q_HEADS, KV_HEADS = 32, 8
# One run takes seconds on an H200; a run that hangs is reported as failed, not waited for.
RUN_TIMEOUT_S = 600


def causal_flops(d):
    return sum(attention_flops(1, s, Q_HEADS, d, True) for s in LENGTHS)


def parse_list(text, what, allowed=None):
    items = [x.strip() for x in text.split(",") if x.strip()]
    if not items:
        raise SystemExit(f"ragged_mix.py: {what} is empty")
    if allowed is not None:
        for x in items:
            if x not in allowed:
                raise SystemExit(f"ragged_mix.py: {what}: '{x}' is not one of {', '.join(allowed)}")
    return items


def run_one(binary, d, scheduler, out_dir):
    cmd = [binary, "run", "--q-lens", ",".join(map(str, LENGTHS)), "--heads", str(Q_HEADS),
           "--kv-heads", str(KV_HEADS), "--head-dim", str(d), "--mask", "causal",
           "--scheduler", scheduler, "--out", os.path.join(out_dir, f"run_d{d}_{scheduler}")]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
        log, rc = proc.stdout + proc.stderr, proc.returncode
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        log, rc = out + f"\nragged_mix.py: timed out after {RUN_TIMEOUT_S} s\n", "timeout"
    with open(os.path.join(out_dir, f"run_d{d}_{scheduler}.log"), "w") as f:
        f.write(log)
    row = {"d": d, "scheduler": scheduler, "rc": rc}
    m = re.search(r"^makespan\s+([\d.]+) us\s+([\d.]+) us", log, re.M)
    if m:
        row["measured_us"] = float(m.group(1))
        row["predicted_us"] = float(m.group(2))
        row["tflops"] = causal_flops(d) / (row["measured_us"] * 1e-6) / 1e12
    m = re.search(r"^workload: .*, BM (\d+)", log, re.M)
    if m:
        row["block_m"] = int(m.group(1))
    m = re.search(r"^schedule: (.*)$", log, re.M)
    row["schedule_check"] = m.group(1) if m else None
    m = re.search(r"^output: (.*)$", log, re.M)
    row["output_check"] = m.group(1) if m else None
    row["ok"] = (rc == 0 and "measured_us" in row and row["schedule_check"] is not None
                 and "DIFFERS" not in row["schedule_check"] and row["output_check"] is not None
                 and ", 0 over" in row["output_check"])
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tilesched", required=True, help="the tilesched binary (GPU build)")
    ap.add_argument("--out", required=True, help="directory for ragged.md, ragged.json and logs")
    ap.add_argument("--head-dims", default="64,128,256")
    ap.add_argument("--schedulers", default="queued,lpt_queued,planned")
    args = ap.parse_args()
    dims = [int(x) for x in parse_list(args.head_dims, "--head-dims", ["64", "128", "256"])]
    kinds = parse_list(args.schedulers, "--schedulers",
                       ["tile", "queued", "transient", "lpt", "lpt_queued", "planned",
                        "ragged_queued"])
    if not os.access(args.tilesched, os.X_OK):
        raise SystemExit(f"ragged_mix.py: --tilesched {args.tilesched} is not an executable file")
    os.makedirs(args.out, exist_ok=True)

    rows = []
    total = len(dims) * len(kinds)
    for d in dims:
        for kind in kinds:
            print(f"[{len(rows) + 1}/{total}] d = {d}, {kind}", file=sys.stderr, flush=True)
            rows.append(run_one(args.tilesched, d, kind, args.out))

    lines = [f"Ragged causal mix: lengths {', '.join(map(str, LENGTHS))}; {Q_HEADS} query / "
             f"{KV_HEADS} KV heads. Traced makespan of one launch, TFLOP/s on the causal FLOPs, "
             "the simulator's prediction in brackets.", "",
             "| d (BM) | " + " | ".join(kinds) + " |", "|---|" + "---|" * len(kinds)]
    for d in dims:
        cells = []
        bm = None
        for kind in kinds:
            r = next(x for x in rows if x["d"] == d and x["scheduler"] == kind)
            bm = r.get("block_m", bm)
            if "measured_us" not in r:
                cells.append(f"failed (rc {r['rc']})")
                continue
            cell = f"{r['measured_us']:.0f} us, {r['tflops']:.1f} ({r['predicted_us']:.0f})"
            cells.append(cell if r["ok"] else cell + ", CHECK FAILED")
        lines.append(f"| {d} ({bm if bm is not None else '?'}) | " + " | ".join(cells) + " |")
    lines += ["", "Checks: " + "; ".join(
        f"d {r['d']} {r['scheduler']}: {r['schedule_check']} / {r['output_check']}" for r in rows)]
    md = "\n".join(lines) + "\n"
    write_atomic(os.path.join(args.out, "ragged.md"), md)
    write_atomic(os.path.join(args.out, "ragged.json"),
                 json.dumps({"lengths": LENGTHS, "q_heads": Q_HEADS, "kv_heads": KV_HEADS,
                             "runs": rows}, indent=1) + "\n")
    print(md)
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
