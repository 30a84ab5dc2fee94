#!/usr/bin/env python3
"""Several rounds of the benchmark grid as one table: the side_by_side.json files that
tools/bench/gpu_bench.sh (gpu_bench.py --out) wrote, one per round, merged per shape. Each row
lists every round's TFLOP/s; ours/cuDNN is the ratio of the rounds' means, ours/FA4 the mean of
the rounds' ratios (FlashAttention-4 where the rounds timed it). Then how the grid stands against
the targets of docs/gpu-performance.md: ours >= 1.0x cuDNN at every shape, >= 1.10x cuDNN and
>= 1.0x FA4 at seq >= 4096, with the shapes that miss.

  tools/bench/grid_rounds.py ROUND1/side_by_side.json ROUND2/side_by_side.json ... [--markdown FILE]

The CTAs column says "clusters of 2" where the point ran in clusters of two CTAs (bench's
cluster_ctas). Every round must hold the same shapes (d, seq, causal) with the same kernel (BM,
BN, CTAs, clusters, scheduler) and the peers' inputs drawn alike (gpu_bench.py --peer-inputs; a file without the field
is from before the option: bf16-rand); a round that differs, or a missing or malformed file, is
refused with exit 2. A peer
not timed at a shape (NaN in gpu_bench.py's JSON) shows as "-", and the shape leaves that peer's
targets (named beside them) unless every round timed it. The Markdown goes to stdout, and with
--markdown to FILE too (written whole or not at all).
"""
import argparse
import json
import math
import sys

from atomic_file import write_atomic
from gpu_bench import ctas_cell

KEY = ("d", "seq", "causal")
KERNEL = ("block_m", "kernel_block_n", "num_ctas", "cluster_ctas", "scheduler")


def refuse(message):
    print(f"grid_rounds.py: {message}", file=sys.stderr)
    sys.exit(2)


def positive_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0


def read_round(path):
    try:
        with open(path) as f:
            data = json.load(f)
    except OSError as e:
        refuse(f"cannot read {path}: {e.strerror}")
    except json.JSONDecodeError as e:
        refuse(f"{path} is not JSON: {e.msg} at line {e.lineno}")
    rows = data.get("rows") if isinstance(data, dict) else None
    if not isinstance(rows, list) or not rows:
        refuse(f"{path} has no rows (expected gpu_bench.py --out's JSON)")
    inputs = data.get("peer_inputs", "bf16-rand")
    if inputs not in ("full", "bf16-rand"):
        refuse(f"{path}: 'peer_inputs' must be \"full\" or \"bf16-rand\", not {inputs!r}")
    out = {}
    for i, r in enumerate(rows):
        if not isinstance(r, dict):
            refuse(f"{path}: row {i} is not an object")
        for field in KEY + ("tflops", "cudnn_tflops"):
            if field not in r:
                refuse(f"{path}: row {i} has no '{field}'")
        if not positive_number(r["tflops"]):
            refuse(f"{path}: row {i}: 'tflops' must be a positive number, not {r['tflops']!r}")
        # NaN is gpu_bench.py's mark of a shape the peer did not time (cuDNN refused it, or FA4
        # below its minimum length or refusing it).
        r = dict(r)
        for field in ("cudnn_tflops", "fa4_tflops"):
            value = r.get(field)
            if isinstance(value, float) and math.isnan(value):
                r[field] = None
            elif value is not None and not positive_number(value):
                refuse(f"{path}: row {i}: '{field}' must be a positive number or NaN, not "
                       f"{value!r}")
        key = tuple(r[k] for k in KEY)
        if key in out:
            refuse(f"{path}: shape d={key[0]} seq={key[1]} causal={key[2]} appears twice")
        out[key] = r
    return inputs, out


def merge(paths):
    read = [read_round(p) for p in paths]
    inputs = read[0][0]
    rounds = [r for _, r in read]
    shapes = sorted(rounds[0])
    for path, (round_inputs, r) in zip(paths[1:], read[1:]):
        if round_inputs != inputs:
            refuse(f"{path}: the peers' inputs were drawn {round_inputs}, in {paths[0]} {inputs} "
                   "(gpu_bench.py --peer-inputs): the rounds are not alike")
        if sorted(r) != shapes:
            refuse(f"{path} has other shapes than {paths[0]}")
        for key in shapes:
            for field in KERNEL:
                if r[key].get(field) != rounds[0][key].get(field):
                    refuse(f"{path}: d={key[0]} seq={key[1]} causal={key[2]} ran another kernel "
                           f"({field} {r[key].get(field)!r}, not {rounds[0][key].get(field)!r})")
    merged = []
    for key in shapes:
        rows = [r[key] for r in rounds]
        ours = [x["tflops"] for x in rows]
        cudnn = [x["cudnn_tflops"] for x in rows]
        fa4 = [x.get("fa4_tflops") for x in rows]
        merged.append({
            "key": key, "first": rows[0], "ours": ours, "cudnn": cudnn,
            "fa4": fa4 if any(f is not None for f in fa4) else None,
            # A ratio only where the peer was timed in every round.
            "vs_cudnn": (sum(ours) / len(ours)) / (sum(cudnn) / len(cudnn))
            if all(c is not None for c in cudnn) else None,
            "vs_fa4": sum(o / f for o, f in zip(ours, fa4)) / len(ours)
            if all(f is not None for f in fa4) else None,
        })
    return inputs, merged


def bold_if(value, met):
    return f"**{value:.3f}**" if met else f"{value:.3f}"


def listed(values):
    return ", ".join("-" if v is None else f"{v:.1f}" for v in values)


def ratio_cell(value, bar):
    return "-" if value is None else bold_if(value, value >= bar)


def shape_name(key):
    return f"d = {key[0]} {key[1]} {'causal' if key[2] else 'dense'}"


def markdown(inputs, merged, rounds):
    lines = [f"{rounds} round{'s' if rounds != 1 else ''}: TFLOP/s per round; ours/cuDNN the "
             "ratio of the rounds' means, ours/FA4 the mean of the rounds' ratios; the peers' "
             f"inputs drawn {inputs}.", "",
             "| d | seq | causal | BM | BN | CTAs | scheduler | ours | cuDNN | ours/cuDNN | FA4 "
             "| ours/FA4 |",
             "|---|---|---|---:|---:|---:|---|---|---|---:|---|---:|"]
    for m in merged:
        d, seq, causal = m["key"]
        x = m["first"]
        fa4 = listed(m["fa4"]) if m["fa4"] else "-"
        lines.append(
            f"| {d} | {seq} | {'yes' if causal else 'no'} | {x.get('block_m', '-')} | "
            f"{x.get('kernel_block_n', '-')} | {ctas_cell(x)} | {x.get('scheduler', '-')} "
            f"| {listed(m['ours'])} | {listed(m['cudnn'])} | "
            f"{ratio_cell(m['vs_cudnn'], 1.0)} | {fa4} | {ratio_cell(m['vs_fa4'], 1.0)} |")

    def target(label, rows, ratio, bar, peer):
        timed = [m for m in rows if m[ratio] is not None]
        misses = [m for m in timed if m[ratio] < bar]
        text = f"- {label}: **{len(timed) - len(misses)} of {len(timed)}**"
        if misses:
            text += "; misses: " + ", ".join(
                f"{shape_name(m['key'])} {m[ratio]:.3f}" for m in misses)
        if len(timed) != len(rows):
            text += f" ({len(rows) - len(timed)} shapes without a {peer} time in every round: " + \
                ", ".join(shape_name(m["key"]) for m in rows if m[ratio] is None) + ")"
        return text

    long_rows = [m for m in merged if m["key"][1] >= 4096]
    lines += ["", target("ours >= 1.0x cuDNN", merged, "vs_cudnn", 1.0, "cuDNN"),
              target("ours >= 1.10x cuDNN at seq >= 4096", long_rows, "vs_cudnn", 1.10, "cuDNN")]
    if any(m["fa4"] for m in long_rows):
        lines.append(target("ours >= 1.0x FA4 at seq >= 4096", long_rows, "vs_fa4", 1.0, "FA4"))
    else:
        lines.append("- ours >= 1.0x FA4 at seq >= 4096: not timed (gpu_bench.sh without FA4_SITE)")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("rounds", nargs="+", metavar="SIDE_BY_SIDE_JSON",
                    help="gpu_bench.py --out's JSON of each round")
    ap.add_argument("--markdown", metavar="FILE", help="also write the Markdown to FILE")
    args = ap.parse_args()
    text = markdown(*merge(args.rounds), len(args.rounds))
    sys.stdout.write(text)
    if args.markdown:
        try:
            write_atomic(args.markdown, text)
        except OSError as e:
            refuse(f"cannot write {args.markdown}: {e.strerror}")


if __name__ == "__main__":
    main()
