#!/usr/bin/env python3
"""Side-by-side benchmark: our kernel (from `tilesched bench --json`) and PyTorch SDPA with the
cuDNN backend on the same shapes, same GPU, same run. Runs on the device machine.

  python3 tools/bench/gpu_bench.py --ours bench.json            # read our results
  python3 tools/bench/gpu_bench.py --tilesched build/.../tilesched [--quick]   # run ours first

Prints a table (shape, ours TFLOP/s, cuDNN TFLOP/s, ratio; with --fa4-site DIR also
FlashAttention-4's, timed alike in the same process), writes it as Markdown (--markdown) and the
merged numbers as JSON (--out).
"""
import argparse
import json
import statistics
import subprocess
import sys
import time

from atomic_file import write_atomic


def attention_flops(batch, seq, heads, d, causal):
    # 4 * (query, key) pairs * heads * d; causal counts exactly the unmasked pairs.
    pairs = seq * (seq + 1) / 2 if causal else seq * seq
    return 4.0 * batch * pairs * heads * d


def time_alike(torch, launch, warmup, iters, cooldown_ms, heat_ms):
    """Median ms of one `launch()`, timed as `tilesched bench` times ours: after the same idle
    pause, heating launches and warm-up, the timed launches go back to back, each between two
    events, and the host waits once at the end (so neither side's figure holds host launch
    latency)."""
    launch()  # plan, handle creation or JIT compilation
    torch.cuda.synchronize()
    time.sleep(cooldown_ms / 1000.0)
    heat_until = time.monotonic() + heat_ms / 1000.0
    while time.monotonic() < heat_until:
        for _ in range(4):
            launch()
        torch.cuda.synchronize()
    for _ in range(warmup):
        launch()
    torch.cuda.synchronize()
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
              for _ in range(iters)]
    for start, end in events:
        start.record()
        launch()
        end.record()
    torch.cuda.synchronize()
    return statistics.median(start.elapsed_time(end) for start, end in events)


# How the peers' random inputs are made (--peer-inputs). `tilesched bench` fills Q, K and V with
# uniform values in [-1, 1) drawn at float precision and rounded to bf16 (device_problem.cu), so
# their mantissas are random. torch.rand in bf16 draws only 8 random bits, k / 256, which after
# * 2 - 1 leaves 256 values, multiples of 1 / 128, whose mantissas end in zeros: the tensor cores
# toggle fewer bits on them, which can lower their power and, under the H200's power limit,
# raise their clock (measured on an NVIDIA H200, 2026-12-02: docs/gpu-performance.md). "full" (the
# default) draws like ours; "bf16-rand" is how every table before 2026-12-02 was measured.
PEER_INPUTS = ("full", "bf16-rand")


def random_qkv(torch, shape, seed, inputs="full"):
    if inputs not in PEER_INPUTS:
        raise ValueError(f"inputs must be one of {PEER_INPUTS}, not {inputs!r}")
    g = torch.Generator(device="cuda").manual_seed(seed)
    if inputs == "bf16-rand":
        return [torch.rand(shape, device="cuda", dtype=torch.bfloat16, generator=g) * 2 - 1
                for _ in range(3)]
    return [(torch.rand(shape, device="cuda", dtype=torch.float32, generator=g) * 2 - 1)
            .to(torch.bfloat16) for _ in range(3)]


def load_fa4(site_dir, prog):
    """FlashAttention-4's flash_attn_func from the packages installed in site_dir; exits naming
    prog and the directory if they cannot be imported."""
    import site
    site.addsitedir(site_dir)
    try:
        from flash_attn.cute import flash_attn_func
    except ImportError as e:
        sys.exit(f"{prog}: --fa4-site {site_dir}: cannot import flash_attn.cute ({e})")
    return flash_attn_func


def time_cudnn(torch, batch, seq, heads, d, causal, warmup, iters, cooldown_ms, heat_ms,
               inputs="full"):
    """Median ms of one PyTorch SDPA launch with the cuDNN backend ([batch, heads, seq, d])."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    import torch.nn.functional as F

    q, k, v = random_qkv(torch, (batch, heads, seq, d), seq * 31 + d, inputs)
    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
        return time_alike(torch, lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal),
                          warmup, iters, cooldown_ms, heat_ms)


def time_fa4(torch, flash_attn_func, batch, seq, heads, d, causal, warmup, iters, cooldown_ms,
             heat_ms, inputs="full"):
    """Median ms of one FlashAttention-4 launch (`flash_attn.cute.flash_attn_func`, its layout
    [batch, seq, heads, d]); the first launch compiles the kernel for the shape, untimed."""
    q, k, v = random_qkv(torch, (batch, seq, heads, d), seq * 31 + d, inputs)
    return time_alike(torch, lambda: flash_attn_func(q, k, v, causal=causal), warmup, iters,
                      cooldown_ms, heat_ms)


def same_as_ours(given, ours_value, flag, ours_path):
    """The value ours was measured with; a different one given on the command line is an error."""
    if given is None or given == ours_value:
        return ours_value
    sys.exit(f"gpu_bench.py: {flag} {given} but {ours_path} was measured with {ours_value} ms: "
             "both sides must be timed alike")


def ctas_cell(row):
    """The point's CTAs, and its clusters where bench says it ran in clusters of several CTAs (a
    file from before bench wrote cluster_ctas has none)."""
    cluster = row.get("cluster_ctas")
    ctas = f"{row.get('num_ctas', '-')}"
    return ctas + (f", clusters of {cluster}" if isinstance(cluster, int) and cluster > 1 else "")


def markdown_head(with_fa4):
    """The side-by-side table's header rows (with FA4's two columns where it was timed)."""
    return ["| d | seq | batch | heads | causal | ours scheduler | ours CTAs | ours TFLOP/s | "
            "cuDNN TFLOP/s | ours/cuDNN |" + (" FA4 TFLOP/s | ours/FA4 |" if with_fa4 else ""),
            "|---|---|---|---|---|---|---|---|---|---|" + ("---|---|" if with_fa4 else "")]


def markdown_line(row, cudnn, ratio, fa4=None):
    """One point of the side-by-side table: bench's row, cuDNN's TFLOP/s and ours/cuDNN, and
    where FA4 was timed (fa4_tflops, ours/FA4) its columns ("-" for a point it was not run at)."""
    fa4_md = ""
    if fa4 is not None:
        fa4_md = f" {fa4[0]:.1f} | {fa4[1]:.3f} |" if fa4[0] == fa4[0] else " - | - |"
    return (f"| {row['d']} | {row['seq']} | {row['batch']} | {row['heads']} | "
            f"{'yes' if row['causal'] else 'no'} | {row['scheduler']} | {ctas_cell(row)} | "
            f"{row['tflops']:.1f} | {cudnn:.1f} | {ratio:.3f} |" + fa4_md)


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
    ap.add_argument("--fa4-site", metavar="DIR",
                    help="also time FlashAttention-4 (flash-attn-4, CuTe DSL) alike, from the\n"
                         "packages installed in DIR (site.addsitedir), at seq >= --fa4-min-seq")
    ap.add_argument("--fa4-min-seq", type=int, default=4096,
                    help="shortest sequence FlashAttention-4 is timed at (default 4096: the\n"
                         "issue's FA4 target; each new shape compiles for a few seconds)")
    ap.add_argument("--peer-inputs", choices=PEER_INPUTS, default="full",
                    help="how the peers' random Q, K, V are drawn: full (default; uniform in\n"
                         "[-1, 1) at float precision, rounded to bf16, as ours are) or bf16-rand\n"
                         "(torch.rand in bf16: multiples of 1/128, as the tables measured before\n"
                         "2026-12-02)")
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

    flash_attn_func = load_fa4(args.fa4_site, "gpu_bench.py") if args.fa4_site else None

    device = torch.cuda.get_device_name()
    lines = markdown_head(flash_attn_func is not None)
    print(f"device: {device} (ours measured on {ours.get('device')}, {ours.get('date')}); "
          f"peer inputs: {args.peer_inputs}")
    print(f"{'d':>4} {'seq':>6} {'batch':>5} {'H':>3} {'causal':>6} {'ours':>8} {'cuDNN':>8} {'ratio':>6}"
          + (f" {'FA4':>8} {'ratio':>6}" if flash_attn_func else ""))
    merged = []
    nan = float("nan")
    for row in ours["rows"]:
        b, s, h, d, causal = row["batch"], row["seq"], row["heads"], row["d"], row["causal"]
        flops = attention_flops(b, s, h, d, causal)
        try:
            ms = time_cudnn(torch, b, s, h, d, causal, args.warmup, args.iters, args.cooldown_ms,
                            args.heat_ms, args.peer_inputs)
            cudnn = flops / (ms * 1e-3) / 1e12
        except Exception as e:  # a shape cuDNN refuses: say so, keep going
            print(f"cuDNN failed on d={d} seq={s}: {e}", file=sys.stderr)
            cudnn = nan
        fa4 = nan
        if flash_attn_func and s >= args.fa4_min_seq:
            try:
                ms = time_fa4(torch, flash_attn_func, b, s, h, d, causal, args.warmup, args.iters,
                              args.cooldown_ms, args.heat_ms, args.peer_inputs)
                fa4 = flops / (ms * 1e-3) / 1e12
            except Exception as e:  # a shape FA4 refuses: say so, keep going
                print(f"FA4 failed on d={d} seq={s}: {str(e)[:300]}", file=sys.stderr)
        ratio = row["tflops"] / cudnn if cudnn == cudnn and cudnn > 0 else nan
        fa4_ratio = row["tflops"] / fa4 if fa4 == fa4 and fa4 > 0 else nan
        fa4_cols = f" {fa4:>8.1f} {fa4_ratio:>6.3f}" if flash_attn_func else ""
        print(f"{d:>4} {s:>6} {b:>5} {h:>3} {'yes' if causal else 'no':>6} {row['tflops']:>8.1f} "
              f"{cudnn:>8.1f} {ratio:>6.3f}{fa4_cols}", flush=True)
        lines.append(markdown_line(row, cudnn, ratio,
                                   (fa4, fa4_ratio) if flash_attn_func else None))
        out = dict(row, cudnn_tflops=cudnn, ratio=ratio)
        if flash_attn_func:
            out.update(fa4_tflops=fa4, fa4_ratio=fa4_ratio)
        merged.append(out)
    if args.out:
        write_atomic(args.out, json.dumps({"device": device, "peer_inputs": args.peer_inputs,
                                            "ours": ours, "rows": merged}, indent=1))
    if args.markdown:
        write_atomic(args.markdown, "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
