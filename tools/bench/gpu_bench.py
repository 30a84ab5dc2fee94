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
import time


def attention_flops(batch, seq, heads, d, causal):
    # 4 * (query, key) pairs * heads * d; causal counts exactly the unmasked pairs.
    pairs = seq * (seq + 1) / 2 if causal else seq * seq
    return 4.0 * batch * pairs * heads * d


def time_cudnn(torch, batch, seq, heads, d, causal, warmup, iters, cooldown_ms, heat_ms):
    """Median ms of one cuDNN launch, timed as `tilesched bench` times ours: after the same idle
    pause, heating launches and warm-up, the timed launches go back to back, each between two
    events, and the host waits once at the end (so neither side's figure holds host launch
    latency)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    import torch.nn.functional as F

    g = torch.Generator(device="cuda").manual_seed(seq * 31 + d)
    shape = (batch, heads, seq, d)
    q, k, v = (torch.rand(shape, device="cuda", dtype=torch.bfloat16, generator=g) * 2 - 1
               for _ in range(3))
    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
        F.scaled_dot_product_attention(q, k, v, is_causal=causal)  # plan and handle creation
        torch.cuda.synchronize()
        time.sleep(cooldown_ms / 1000.0)
        heat_until = time.monotonic() + heat_ms / 1000.0
        while time.monotonic() < heat_until:
            for _ in range(4):
                F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            torch.cuda.synchronize()
        for _ in range(warmup):
            F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        torch.cuda.synchronize()
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                  for _ in range(iters)]
        for start, end in events:
            start.record()
            F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            end.record()
        torch.cuda.synchronize()
        times = [start.elapsed_time(end) for start, end in events]
    return statistics.median(times)


def same_as_ours(given, ours_value, flag, ours_path):
    """The value ours was measured with; a different one given on the command line is an error."""
    if given is None or given == ours_value:
        return ours_value
    sys.exit(f"gpu_bench.py: {flag} {given} but {ours_path} was measured with {ours_value} ms: "
             "both sides must be timed alike")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--ours", help="JSON written by `tilesched bench --json`")
    src.add_argument("--tilesched", help="path of the tilesched executable to run first")
    ap.add_argument("--quick", action="store_true", help="with --tilesched: the reduced grid")
    ap.add_argument("--warmup", type=int, default=None, help="default: as ours (3)")
    ap.add_argument("--iters", type=int, default=None, help="default: as ours (20)")
    ap.add_argument("--cooldown-ms", type=int, default=None,
                    help="idle ms before each shape, for both kernels (a power-capped GPU lowers\n"
                         "its clocks under sustained load); with --ours, the JSON's value")
    ap.add_argument("--heat-ms", type=int, default=None,
                    help="back-to-back launches for this long before each shape's warm-up, for\n"
                         "both kernels (the sustained, power-capped state); with --ours, the\n"
                         "JSON's value")
    ap.add_argument("--out", help="write merged results as JSON")
    ap.add_argument("--markdown", help="write the table as Markdown")
    args = ap.parse_args()

    if args.tilesched:
        args.warmup = 3 if args.warmup is None else args.warmup
        args.iters = 20 if args.iters is None else args.iters
        ours_path = "gpu_bench_ours.json"
        cmd = [args.tilesched, "bench", "--json", ours_path, "--warmup", str(args.warmup),
               "--iters", str(args.iters), "--cooldown-ms", str(args.cooldown_ms or 0),
               "--heat-ms", str(args.heat_ms or 0)] + \
            (["--quick"] if args.quick else [])
        subprocess.run(cmd, check=True)
    else:
        ours_path = args.ours
    with open(ours_path) as f:
        ours = json.load(f)
    # cuDNN is timed as ours was unless told otherwise.
    args.warmup = ours.get("warmup", 3) if args.warmup is None else args.warmup
    args.iters = ours.get("iterations", 20) if args.iters is None else args.iters
    # Both sides pause and heat alike before each shape, or the ratio compares clock states.
    args.cooldown_ms = same_as_ours(args.cooldown_ms, ours.get("cooldown_ms", 0), "--cooldown-ms",
                                    ours_path)
    args.heat_ms = same_as_ours(args.heat_ms, ours.get("heat_ms", 0), "--heat-ms", ours_path)

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
            ms = time_cudnn(torch, b, s, h, d, causal, args.warmup, args.iters, args.cooldown_ms,
                            args.heat_ms)
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
