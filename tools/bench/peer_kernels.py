#!/usr/bin/env python3
"""Launches a peer attention kernel (cuDNN through PyTorch SDPA, or FlashAttention-4) at shapes of
the benchmark grid, each inside an NVTX range named "peer", for a profiler to catch:

  ncu --nvtx --nvtx-include "peer/" --launch-count 1 -o cudnn \
      python3 tools/bench/peer_kernels.py cudnn --head-dim 128 --seq-len 8192
  ... peer_kernels.py fa4 --fa4-site /tmp/fa4site ...
  ... peer_kernels.py cudnn --shapes 128:8192:none,64:512:causal --launches 1

One shape from --head-dim, --seq-len and --causal, or several from --shapes (D:SEQ:none|causal,
comma-separated; launched in that order, so the profiled kernels come in it). For each, the
inputs are made and the kernel launched once (planning, JIT compilation) outside the range; inside
it the kernel is launched --launches times. tools/bench/ncu_compare.sh profiles the peers this
way.
"""
import argparse
import sys

import gpu_bench


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("peer", choices=["cudnn", "fa4"])
    ap.add_argument("--head-dim", type=int, default=128)
    ap.add_argument("--seq-len", type=int, default=8192)
    ap.add_argument("--causal", action="store_true")
    ap.add_argument("--launches", type=int, default=2)
    ap.add_argument("--shapes", metavar="LIST",
                    help="D:SEQ:none|causal,... (instead of --head-dim, --seq-len, --causal)")
    ap.add_argument("--fa4-site", metavar="DIR", help="where flash-attn-4 is installed (fa4)")
    args = ap.parse_args()
    shapes = parse_shapes(args.shapes, "peer_kernels.py") if args.shapes else [
        (args.head_dim, args.seq_len, args.causal)]
    check_grid_shapes(shapes, "peer_kernels.py")
    if args.launches < 1:
        sys.exit("peer_kernels.py: --launches must be at least 1")
    if args.peer == "fa4" and not args.fa4_site:
        sys.exit("peer_kernels.py: fa4 needs --fa4-site DIR")

    import torch
    import torch.nn.functional as F

    if args.peer == "cudnn":
        from torch.nn.attention import SDPBackend, sdpa_kernel
    else:
        flash_attn_func = gpu_bench.load_fa4(args.fa4_site, "peer_kernels.py")

    for d, s, causal in shapes:
        batch, heads = 16384 // s, 2048 // d
        if args.peer == "cudnn":
            q, k, v = gpu_bench.random_qkv(torch, (batch, heads, s, d), s * 31 + d)

            def launch():
                with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                    F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        else:
            q, k, v = gpu_bench.random_qkv(torch, (batch, s, heads, d), s * 31 + d)

            def launch():
                flash_attn_func(q, k, v, causal=causal)

        launch()
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_push("peer")
        for _ in range(args.launches):
            launch()
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()
        print(f"peer_kernels.py: {args.peer} d {d} seq {s} batch {batch} heads {heads} "
              f"{'causal' if causal else 'dense'}: {args.launches} launches", flush=True)
        del q, k, v


def parse_shapes(text, prog):
    """[(d, seq, causal)] from D:SEQ:none|causal,...; exits naming prog and the first bad entry.
    Whether they are grid shapes is check_grid_shapes's question."""
    shapes = []
    for entry in text.split(","):
        parts = entry.split(":")
        if len(parts) != 3 or not parts[0].isdigit() or not parts[1].isdigit() or \
                parts[2] not in ("none", "causal"):
            sys.exit(f"{prog}: --shapes entry {entry!r} is not D:SEQ:none|causal")
        shapes.append((int(parts[0]), int(parts[1]), parts[2] == "causal"))
    return shapes


def check_grid_shapes(shapes, prog):
    """Exits naming prog and the first (d, seq, causal) that is no shape of the benchmark grid:
    d 64, 128 or 256 (2048 / d heads), seq dividing 16384 (16384 / seq sequences)."""
    for d, s, _ in shapes:
        if d not in (64, 128, 256) or s < 1 or 16384 % s != 0:
            sys.exit(f"{prog}: no grid shape with --head-dim {d} --seq-len {s} "
                     "(d in 64, 128, 256; seq dividing 16384)")


if __name__ == "__main__":
    main()
