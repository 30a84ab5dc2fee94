#!/usr/bin/env python3
"""The table of tools/bench/gap_split.sh: at each shape, our kernel beside each peer measured, with
the SM clock locked to base and at the GPU's own clock, and the speed ratio split into its two
factors. With t the duration at the own clock, c the SM cycles at the base clock and f the own
clock:

  ours/peer speed = t_peer / t_ours,  per cycle = c_peer / c_ours,  clock = f_ours / f_peer

Speed ~ per cycle x clock (exactly so if a kernel took as many cycles at its own clock as at the
base one): a speed ratio below 1 whose per-cycle factor is >= 1 is lost to the clock (the energy
a launch spends, under the power limit), one whose per-cycle factor is below 1 to the kernel's
work per cycle.

Reads OUT_DIR/ours_<d>_<seq>_<mask>_{base,none}.csv (one kernel each) and
OUT_DIR/<peer>_{base,none}.csv (one kernel per shape of OUT_DIR/<peer>_shapes.txt, in order).

  gap_split.py OUT_DIR D:SEQ:MASK,...
"""
import os
import sys

import ncu_csv
import peer_kernels

TIME, CYCLES, CLOCK = "gpu__time_duration.sum", "sm__cycles_elapsed.max", "sm__cycles_elapsed.avg.per_second"
TENSOR = "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_elapsed"
INST = "smsp__inst_executed.sum"
GRID = "launch__grid_size"
METRICS = (TIME, CYCLES, CLOCK, TENSOR, INST, GRID)
OPTIONAL = (TENSOR,)  # Nsight Compute may answer "n/a"
PEERS = (("cudnn", "cuDNN"), ("fa4", "FA4"))


def fail(msg):
    sys.exit(f"gap_split.py: {msg}")


def read_kernels(path):
    return ncu_csv.read_kernels(path, METRICS, "gap_split.py", optional=OPTIONAL)


def parse_shapes(text):
    """The shapes as D:SEQ:none|causal strings (the CSVs' names), checked as peer_kernels.py
    checks its --shapes."""
    shapes = peer_kernels.parse_shapes(text.strip(), "gap_split.py")
    peer_kernels.check_grid_shapes(shapes, "gap_split.py")
    return [f"{d}:{s}:{'causal' if causal else 'none'}" for d, s, causal in shapes]


def main():
    if len(sys.argv) != 3:
        fail("usage: gap_split.py OUT_DIR D:SEQ:MASK,...")
    out, shapes = sys.argv[1], parse_shapes(sys.argv[2])
    measured = {}  # (shape, kernel label) -> {"base": metrics, "none": metrics}
    for shape in shapes:
        d, seq, mask = shape.split(":")
        measured[(shape, "ours")] = {}
        for clock in ("base", "none"):
            kernels = read_kernels(os.path.join(out, f"ours_{d}_{seq}_{mask}_{clock}.csv"))
            if len(kernels) != 1:
                fail(f"ours_{d}_{seq}_{mask}_{clock}.csv: {len(kernels)} kernels profiled, not 1")
            measured[(shape, "ours")][clock] = kernels[0]
    peers = []
    for peer, label in PEERS:
        listed = os.path.join(out, f"{peer}_shapes.txt")
        if not os.path.isfile(listed):
            continue
        with open(listed) as f:
            peer_shapes = parse_shapes(f.read())
        peers.append(label)
        for clock in ("base", "none"):
            kernels = read_kernels(os.path.join(out, f"{peer}_{clock}.csv"))
            if len(kernels) != len(peer_shapes):
                names = sorted({k["name"][:50] for k in kernels})
                fail(f"{peer}_{clock}.csv: {len(kernels)} kernels profiled for {len(peer_shapes)} "
                     f"shapes (kernels: {'; '.join(names)})")
            for shape, k in zip(peer_shapes, kernels):
                measured.setdefault((shape, label), {})[clock] = k
    print("Per kernel: duration and SM clock at the GPU's own clock; SM cycles, tensor pipe and "
          "instructions with the clock locked to base. Per peer: ours/peer speed = per cycle x "
          "clock (approximately).\n")
    print("| d | seq | mask | kernel | grid | us, own clock | GHz, own clock | M cycles, base "
          "| tensor pipe %, base | M instructions | ours/peer speed | per cycle | clock |")
    print("|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for shape in shapes:
        d, seq, mask = shape.split(":")
        ours = measured[(shape, "ours")]
        for label in ["ours"] + peers:
            m = measured.get((shape, label))
            if m is None:
                continue
            base, own = m["base"], m["none"]
            cells = [d, seq, mask, label, f"{own[GRID]:.0f}", f"{own[TIME] * 1e6:.1f}",
                     f"{own[CLOCK] / 1e9:.3f}", f"{base[CYCLES] / 1e6:.3f}",
                     "-" if base[TENSOR] is None else f"{base[TENSOR]:.1f}",
                     f"{base[INST] / 1e6:.1f}"]
            if label == "ours":
                cells += ["", "", ""]
            else:
                cells += [f"{own[TIME] / ours['none'][TIME]:.3f}",
                          f"{base[CYCLES] / ours['base'][CYCLES]:.3f}",
                          f"{ours['none'][CLOCK] / own[CLOCK]:.3f}"]
            print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
