#!/usr/bin/env python3
"""Do the peers' input bits change their speed? cuDNN (PyTorch SDPA) and, with --fa4-site,
FlashAttention-4 timed as gpu_bench.py times them (time_alike: --cooldown-ms idle, 3 warm-up, the
median of 20 back to back) on inputs drawn both ways gpu_bench.py knows (--peer-inputs: full, as
`tilesched bench` draws ours, and bf16-rand, torch.rand in bf16), the two interleaved and their
order alternated per round. Prints, per input kind, its distinct values and mantissa bits set on
one tensor, then per shape and peer the TFLOP/s of each round and full / bf16-rand of the means.
Runs on the device machine (docs/gpu-performance.md, twenty-third session).

  python3 tools/bench/peer_inputs_ab.py [--shapes D:SEQ:none|causal,...] [--rounds N]
      [--fa4-site DIR] [--cooldown-ms MS]

FA4 is timed at seq >= 4096 only, as in gpu_bench.py.
"""
import argparse
import statistics
import sys

import gpu_bench
from peer_kernels import check_grid_shapes, parse_shapes

DEFAULT_SHAPES = "128:8192:none,256:8192:none,64:8192:none,128:16384:causal,256:4096:causal,64:512:causal"


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes", default=DEFAULT_SHAPES, metavar="LIST")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--cooldown-ms", type=int, default=1500)
    ap.add_argument("--fa4-site", metavar="DIR")
    args = ap.parse_args()
    shapes = parse_shapes(args.shapes, "peer_inputs_ab.py")
    check_grid_shapes(shapes, "peer_inputs_ab.py")
    if args.rounds < 1 or args.cooldown_ms < 0:
        sys.exit("peer_inputs_ab.py: --rounds must be at least 1 and --cooldown-ms at least 0")

    import torch

    flash_attn_func = gpu_bench.load_fa4(args.fa4_site, "peer_inputs_ab.py") if args.fa4_site else None
    for kind in gpu_bench.PEER_INPUTS:
        q, _, _ = gpu_bench.random_qkv(torch, (1, 16, 8192, 128), 7, kind)
        mantissa = q.view(torch.int16) & 0x7F
        bits = sum(((mantissa >> b) & 1).float().mean().item() for b in range(7))
        print(f"{kind}: {torch.unique(q.float()).numel()} distinct values, {bits:.2f} of 7 mantissa "
              "bits set per element", flush=True)
    peers = ["cudnn"] + (["fa4"] if flash_attn_func else [])
    tflops = {}
    for r in range(args.rounds):
        kinds = gpu_bench.PEER_INPUTS if r % 2 == 0 else tuple(reversed(gpu_bench.PEER_INPUTS))
        for d, s, causal in shapes:
            b, h = 16384 // s, 2048 // d
            flops = gpu_bench.attention_flops(b, s, h, d, causal)
            for peer in peers:
                if peer == "fa4" and s < 4096:
                    continue
                for kind in kinds:
                    if peer == "cudnn":
                        ms = gpu_bench.time_cudnn(torch, b, s, h, d, causal, 3, 20,
                                                  args.cooldown_ms, 0, kind)
                    else:
                        ms = gpu_bench.time_fa4(torch, flash_attn_func, b, s, h, d, causal, 3, 20,
                                                args.cooldown_ms, 0, kind)
                    tflops.setdefault((d, s, causal, peer, kind), []).append(flops / (ms * 1e-3) / 1e12)
        print(f"round {r + 1} of {args.rounds} done", file=sys.stderr, flush=True)
    print("| d | seq | mask | peer | TFLOP/s, bf16-rand inputs | TFLOP/s, full inputs | full / bf16-rand |")
    print("|---|---:|---|---|---|---|---:|")
    for d, s, causal in shapes:
        for peer in peers:
            old = tflops.get((d, s, causal, peer, "bf16-rand"))
            new = tflops.get((d, s, causal, peer, "full"))
            if not old:
                continue
            print(f"| {d} | {s} | {'causal' if causal else 'none'} | {peer} | "
                  f"{', '.join(f'{x:.1f}' for x in old)} | {', '.join(f'{x:.1f}' for x in new)} | "
                  f"{statistics.mean(new) / statistics.mean(old):.3f} |")


if __name__ == "__main__":
    main()
