#!/usr/bin/env python3
"""Writes the prediction-report suite: one workload JSON per file in this folder.

Length patterns (query rows per sequence): constant, uniform, wide, long-tail, bimodal, skewed, and
short queries over a long KV cache; head dims 64/128/256 with hidden 2048 (heads = 2048 / d, 4
query heads per KV head); causal and not. Each workload is sized to about `TARGET_FLOP` of
attention (FLOPs = 4 * sum(q * k) * heads * d, causal counting the unmasked pairs), which is
~1-8 ms for the kernel at 150-330 TFLOP/s: long enough to time, short enough that `tilesched
suite-run` gets through the whole suite in seconds. The files leave num_ctas and the scheduler
out: `tilesched suite-run` sets both per run. Deterministic: run it again and the files come out
the same.

Usage: tools/bench/suite/make_suite.py   (rewrites tools/bench/suite/*.json)
"""
import json
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))
HIDDEN = 2048
TARGET_FLOP = 0.8e12


def pairs(q, k, causal):
    # Bottom-right aligned causal mask: row i of q sees min(k, i + k - q + 1) keys.
    return q * (k - q) + q * (q + 1) // 2 if causal else q * k


def flops(q_lens, kv_lens, d, causal):
    heads = HIDDEN // d
    return 4 * sum(pairs(q, k, causal) for q, k in zip(q_lens, kv_lens)) * heads * d


def draw(pattern, rng):
    """One sequence length (query rows) of a pattern."""
    if pattern == "constant":
        return 4096
    if pattern == "uniform":
        return rng.randint(1536, 2560)
    if pattern == "wide":
        return rng.randint(64, 8192)
    if pattern == "longtail":
        return rng.randint(8192, 16384) if rng.random() < 0.1 else rng.randint(128, 1024)
    if pattern == "bimodal":
        return rng.randint(6144, 8192) if rng.random() < 0.5 else rng.randint(256, 768)
    if pattern == "skewed":
        # Pareto-like: many short, lengths falling off as a power law, capped.
        return min(16384, int(256 * (1.0 - rng.random()) ** -1.2))
    raise ValueError(pattern)


def make(name, pattern, d, causal, seed, short_q_long_kv=False, padded=False):
    rng = random.Random(seed)
    q_lens, kv_lens = [], []
    # Add sequences until the FLOP target is reached (at least two, so every pattern is a batch).
    while len(q_lens) < 2 or flops(q_lens, kv_lens, d, causal) < TARGET_FLOP:
        if short_q_long_kv:
            q = rng.choice([128, 256, 384, 512]) + rng.randint(0, 127)
            k = q + rng.randint(4096, 16384)
        else:
            q = draw(pattern, rng)
            k = q
        q_lens.append(q)
        kv_lens.append(k)
        if len(q_lens) > 4096:
            raise RuntimeError(name)
    heads = HIDDEN // d
    w = {"num_q_heads": heads, "num_kv_heads": heads // 4, "head_dim": d,
         "mask": "causal" if causal else "none", "block_m": 128, "block_n": 128}
    if padded:
        w = {"batch": len(q_lens), "seq_len": q_lens[0], **w}
    else:
        w = {"q_lens": q_lens, **w}
        if short_q_long_kv:
            w["kv_lens"] = kv_lens
    return name, w, flops(q_lens, kv_lens, d, causal)


def suite():
    out = []
    seed = 1
    for d in (64, 128, 256):
        for pattern in ("constant", "uniform", "wide", "longtail", "bimodal", "skewed"):
            for causal in (True, False):
                name = f"d{d}_{pattern}_{'causal' if causal else 'dense'}"
                out.append(make(name, pattern, d, causal, seed))
                seed += 1
        for causal in (True, False):
            name = f"d{d}_shortq_longkv_{'causal' if causal else 'dense'}"
            out.append(make(name, None, d, causal, seed, short_q_long_kv=True))
            seed += 1
    # Padded batches (no row offsets), the layout of the benchmark grid.
    out.append(make("d128_constant_causal_padded", "constant", 128, True, seed, padded=True))
    out.append(make("d64_constant_dense_padded", "constant", 64, False, seed + 1, padded=True))
    return out


def main():
    for f in os.listdir(HERE):
        if f.endswith(".json"):
            os.remove(os.path.join(HERE, f))
    for name, w, f in suite():
        with open(os.path.join(HERE, name + ".json"), "w") as fh:
            json.dump(w, fh, separators=(",", ":"))
            fh.write("\n")
        print(f"{name}: {len(w.get('q_lens', [])) or w['batch']} sequences, {f / 1e12:.2f} TFLOP")


if __name__ == "__main__":
    main()
