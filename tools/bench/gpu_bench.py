#!/usr/bin/env python3
"""Side-by-side benchmark: our kernel (from `tilesched bench --json`) and PyTorch SDPA with the
cuDNN backend on the same shapes, same GPU, same run. Runs on the device machine.

  python3 tools/bench/gpu_bench.py --ours bench.json            # read our results
  python3 tools/bench/gpu_bench.py --tilesched build/.../tilesched [--quick]   # run ours first

Prints a table (shape, ours TFLOP/s, cuDNN TFLOP/s, ratio), writes it as Markdown (--markdown)
and the merged numbers as JSON (--out).
"""
import argparse
import json
import statistics
import subprocess
import sys


def attention_flops(batch, seq, heads, d, causal):
    # 4 * (query, key) pairs * heads * d; causal counts exactly the unmasked pairs.
    pairs = seq * (seq + 1) / 2 if causal else seq * seq
    return 4.0 * batch * pairs * heads * d


def time_cudnn(torch, batch, seq, heads, d, causal, warmup, iters):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    import torch.nn.functional as F

    g = torch.Generator(device="cuda").manual_seed(seq * 31 + d)
    shape = (batch, heads, seq, d)
    q, k, v = (torch.rand(shape, device="cuda", dtype=torch.bfloat16, generator=g) * 2 - 1
               for _ in range(3))
    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
        for _ in range(warmup):
            F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        torch.cuda.synchronize()
        times = []
        for _ in range(iters):
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--ours", help="JSON written by `tilesched bench --json`")
    src.add_argument("--tilesched", help="path of the tilesched executable to run first")
    ap.add_argument("--quick", action="store_true", help="with --tilesched: the reduced grid")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--out", help="write merged results as JSON")
    ap.add_argument("--markdown", help="write the table as Markdown")
    args = ap.parse_args()

    if args.tilesched:
        ours_path = "gpu_bench_ours.json"
        cmd = [args.tilesched, "bench", "--json", ours_path, "--warmup", str(args.warmup),
               "--iters", str(args.iters)] + (["--quick"] if args.quick else [])
        subprocess.run(cmd, check=True)
    else:
        ours_path = args.ours
    with open(ours_path) as f:
        ours = json.load(f)

    import torch

    device = torch.cuda.get_device_name()
    lines = ["| d | seq | batch | heads | causal | ours scheduler | ours TFLOP/s | cuDNN TFLOP/s | ours/cuDNN |",
             "|---|---|---|---|---|---|---|---|---|"]
    print(f"device: {device} (ours measured on {ours.get('device')}, {ours.get('date')})")
    print(f"{'d':>4} {'seq':>6} {'batch':>5} {'H':>3} {'causal':>6} {'ours':>8} {'cuDNN':>8} {'ratio':>6}")
    merged = []
    for row in ours["rows"]:
        b, s, h, d, causal = row["batch"], row["seq"], row["heads"], row["d"], row["causal"]
        try:
            ms = time_cudnn(torch, b, s, h, d, causal, args.warmup, args.iters)
            cudnn = attention_flops(b, s, h, d, causal) / (ms * 1e-3) / 1e12
        except Exception as e:  # a shape cuDNN refuses: say so, keep going
            print(f"cuDNN failed on d={d} seq={s}: {e}", file=sys.stderr)
            cudnn = float("nan")
        ratio = row["tflops"] / cudnn if cudnn == cudnn and cudnn > 0 else float("nan")
        print(f"{d:>4} {s:>6} {b:>5} {h:>3} {'yes' if causal else 'no':>6} {row['tflops']:>8.1f} "
              f"{cudnn:>8.1f} {ratio:>6.2f}", flush=True)
        lines.append(f"| {d} | {s} | {b} | {h} | {'yes' if causal else 'no'} | {row['scheduler']} | "
                     f"{row['tflops']:.1f} | {cudnn:.1f} | {ratio:.2f} |")
        merged.append(dict(row, cudnn_tflops=cudnn, ratio=ratio))
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"device": device, "ours": ours, "rows": merged}, f, indent=1)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
