#!/usr/bin/env python3
"""The CPU side of the device-only benchmark scripts in tools/bench/: grid_rounds.py,
ncu_summary.py, ragged_mix.py and gpu_bench.py's table rows on synthetic inputs (the figures they
print; ragged_mix.py drives a stand-in for the tilesched binary, as does record_cost_traces.sh,
and compute-sanitizer and tilesched for sanitize_set.sh), and the argument checks of
ncu_compare.sh and peer_kernels.py, which must refuse bad input before touching a GPU. Prints
"ok: ..." when every check passes, else the first failure, exit 1.

  check_bench_scripts.py TOOLS_BENCH_DIR SCRATCH_DIR
"""
import csv
import json
import os
import shutil
import subprocess
import sys


def run(args):
    p = subprocess.run(args, capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def fail(what):
    print(f"FAILED: {what}")
    sys.exit(1)


def expect(cond, what):
    if not cond:
        fail(what)


def main():
    bench, scratch = sys.argv[1], sys.argv[2]
    os.makedirs(scratch, exist_ok=True)
    py = sys.executable

    # ncu_summary.py: figures from the raw export, stall reasons, opcodes from the SASS export.
    prefix = os.path.join(scratch, "k")
    with open(prefix + "_raw.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["ID", "Kernel Name", "gpu__time_duration.sum",
                    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
                    "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",
                    "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio"])
        w.writerow(["", "", "ms", "%", "ratio", "ratio"])
        w.writerow(["0", "fmha_kernel<x>", "1.628", "74.6", "0.86", "1.64"])
    with open(prefix + "_sass.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["Kernel Name", "fmha_kernel<x>"])
        w.writerow(["Address", "Source", "Warp Stall Sampling (All Samples)", "Instructions Executed"])
        w.writerow(["0x10", "HGMMA.64x128x16.F32.BF16 R88, gdesc[UR8], R88", "5", "2000000"])
        w.writerow(["0x20", "@!P0 MUFU.EX2 R1, R2", "3", "3000000"])
        w.writerow(["0x30", "MUFU.EX2 R3, R4", "3", "1000000"])
    rc, out, err = run([py, os.path.join(bench, "ncu_summary.py"), prefix])
    expect(rc == 0, f"ncu_summary.py exit {rc}: {err}")
    expect("| kernel | fmha_kernel<x> |" in out, f"ncu_summary.py kernel row: {out}")
    expect("| tensor pipe active (% of peak) | 74.6 |" in out, f"ncu_summary.py tensor row: {out}")
    expect(out.index("| wait | 1.64 |") < out.index("| barrier | 0.86 |"),
           f"ncu_summary.py stall order: {out}")
    expect("| MUFU | 4.00 |" in out and "| HGMMA | 2.00 |" in out and "| all | 6.00 |" in out,
           f"ncu_summary.py opcodes (a predicate guard is not an opcode): {out}")
    rc, out, err = run([py, os.path.join(bench, "ncu_summary.py"), os.path.join(scratch, "nope")])
    expect(rc != 0 and "nope_raw.csv does not exist" in err, f"ncu_summary.py missing file: {err}")

    # Bad input is refused before any GPU work.
    rc, out, err = run(["bash", os.path.join(bench, "ncu_compare.sh"), "tilesched", os.path.join(scratch, "y"),
                        "128", "8192", "sliding"])
    expect(rc == 2 and "mask must be none or causal, not 'sliding'" in err, f"ncu_compare.sh mask: {rc} {err}")
    rc, out, err = run([py, os.path.join(bench, "peer_kernels.py"), "cudnn", "--seq-len", "1000"])
    expect(rc != 0 and "no grid shape with --head-dim 128 --seq-len 1000" in err,
           f"peer_kernels.py shape: {rc} {err}")
    rc, out, err = run([py, os.path.join(bench, "peer_kernels.py"), "fa4"])
    expect(rc != 0 and "fa4 needs --fa4-site DIR" in err, f"peer_kernels.py fa4 site: {rc} {err}")
    rc, out, err = run([py, os.path.join(bench, "peer_kernels.py"), "cudnn", "--shapes",
                        "128:8192:none,64:512:dense"])
    expect(rc != 0 and "--shapes entry '64:512:dense' is not D:SEQ:none|causal" in err,
           f"peer_kernels.py --shapes: {rc} {err}")
    # ragged_mix.py: a stand-in binary prints what `tilesched run` prints; TFLOP/s from the traced
    # makespan on the mix's causal FLOPs (4228 us at d = 128: 711.9), and a run whose check
    # fails makes the script fail.
    fake = os.path.join(scratch, "fake_tilesched")
    with open(fake, "w") as f:
        f.write("""#!/bin/bash
case "$*" in *planned*) verdict=DIFFERS ;; *) verdict="identical to the simulator's" ;; esac
echo "workload: queued, 10 sequences, Hq 32, Hkv 8, d 128, causal, BM 128"
echo "schedule: queued, tile set $verdict (100 tiles)"
echo "output: 100 tiles vs the simulator, worst relative error 0.00336, 0 over 1e-02"
echo "makespan         4228 us                              4221 us"
""")
    os.chmod(fake, 0o755)
    mix = os.path.join(scratch, "mix")
    rc, out, err = run([py, os.path.join(bench, "ragged_mix.py"), "--tilesched", fake, "--out", mix,
                        "--head-dims", "128", "--schedulers", "queued"])
    expect(rc == 0, f"ragged_mix.py exit {rc}: {err}")
    expect("| 128 (128) | 4228 us, 711.9 (4221) |" in out, f"ragged_mix.py row: {out}")
    with open(os.path.join(mix, "ragged.json")) as f:
        expect(json.load(f)["runs"][0]["ok"] is True, "ragged_mix.py json")
    rc, out, err = run([py, os.path.join(bench, "ragged_mix.py"), "--tilesched", fake, "--out", mix,
                        "--head-dims", "128", "--schedulers", "planned"])
    expect(rc == 1 and "CHECK FAILED" in out, f"ragged_mix.py failed check: {rc} {out}")
    rc, out, err = run([py, os.path.join(bench, "ragged_mix.py"), "--tilesched", fake, "--out", mix,
                        "--head-dims", "96"])
    expect(rc != 0 and "--head-dims: '96' is not one of 64, 128, 256" in err,
           f"ragged_mix.py head dim: {rc} {err}")
    rc, out, err = run([py, os.path.join(bench, "ragged_mix.py"), "--tilesched",
                        os.path.join(scratch, "missing"), "--out", mix])
    expect(rc != 0 and "is not an executable file" in err, f"ragged_mix.py binary: {rc} {err}")
    # record_cost_traces.sh: the runs it asks a stand-in binary for (its flags logged, a trace.json
    # written per run), names with the scheduler's suffix, and bad arguments refused.
    rec_bin = os.path.join(scratch, "fake_record")
    rec_log = os.path.join(scratch, "record_calls.txt")
    with open(rec_bin, "w") as f:
        f.write("#!/bin/sh\n"
                f"echo \"$*\" >> '{rec_log}'\n"
                "while [ $# -gt 0 ]; do [ \"$1\" = --out ] && out=$2; shift; done\n"
                "mkdir -p \"$out\" && echo '{}' > \"$out/trace.json\"\n")
    os.chmod(rec_bin, 0o755)
    rec_out = os.path.join(scratch, "recorded")
    script = os.path.join(bench, "record_cost_traces.sh")
    rc, out, err = run(["bash", script, rec_bin, rec_out, "--grid", "--scheduler", "queued",
                        "--runs", "128:128"])
    expect(rc == 0, f"record_cost_traces.sh exit {rc}: {err}")
    names = sorted(n for n in os.listdir(rec_out) if n.endswith(".trace.json"))
    expect(len(names) == 8 and "h200_d128_causal_queued.trace.json" in names and
           "h200_grid_d128_bm128_s512_none_queued.trace.json" in names,
           f"record_cost_traces.sh files: {names}")
    with open(rec_log) as f:
        calls = f.read().splitlines()
    expect(any(c.startswith("run --scheduler queued --no-check") and "--batch 32 --seq-len 512 "
               "--heads 16 --kv-heads 8" in c and "--mask causal --bm 128" in c for c in calls),
           f"record_cost_traces.sh grid run: {calls}")
    rc, out, err = run(["bash", script, rec_bin, rec_out, "--bogus"])
    expect(rc == 2 and "unknown argument '--bogus'" in err, f"record_cost_traces.sh flag: {err}")
    # grid_rounds.py: rounds of gpu_bench.py --out merged per shape, the targets counted, a peer
    # not timed (NaN) left out of its targets, mismatched or malformed rounds refused.
    grid = os.path.join(scratch, "grid")
    os.makedirs(grid, exist_ok=True)
    nan = float("nan")

    def grid_row(d, seq, causal, ours, cudnn, fa4, bm=128, cluster=None):
        row = {"d": d, "seq": seq, "causal": causal, "block_m": bm, "kernel_block_n": 128,
               "num_ctas": 132, "scheduler": "tile/default", "tflops": ours,
               "cudnn_tflops": cudnn, "fa4_tflops": fa4}
        if cluster is not None:
            row["cluster_ctas"] = cluster
        return row

    def write_round(name, rows):
        path = os.path.join(grid, name)
        with open(path, "w") as f:
            json.dump({"rows": rows}, f)  # NaN as gpu_bench.py writes it
        return path

    r1 = write_round("r1.json", [grid_row(64, 512, True, 99.0, 100.0, nan),
                                 grid_row(128, 4096, False, 720.0, 700.0, 730.0, cluster=1),
                                 grid_row(128, 8192, True, 700.0, 600.0, 690.0, cluster=2),
                                 grid_row(256, 16384, False, 800.0, nan, 790.0)])
    r2 = write_round("r2.json", [grid_row(64, 512, True, 101.0, 100.0, nan),
                                 grid_row(128, 4096, False, 724.0, 704.0, 726.0, cluster=1),
                                 grid_row(128, 8192, True, 710.0, 610.0, 700.0, cluster=2),
                                 grid_row(256, 16384, False, 810.0, 700.0, 800.0)])
    md = os.path.join(grid, "grid.md")
    rc, out, err = run([py, os.path.join(bench, "grid_rounds.py"), r1, r2, "--markdown", md])
    expect(rc == 0, f"grid_rounds.py exit {rc}: {err}")
    for line in ("| 64 | 512 | yes | 128 | 128 | 132 | tile/default | 99.0, 101.0 | 100.0, 100.0 | "
                 "**1.000** | - | - |",
                 "| 128 | 4096 | no | 128 | 128 | 132 | tile/default | 720.0, 724.0 | 700.0, 704.0 | "
                 "**1.028** | 730.0, 726.0 | 0.992 |",
                 "| 256 | 16384 | no | 128 | 128 | 132 | tile/default | 800.0, 810.0 | -, 700.0 | - | "
                 "790.0, 800.0 | **1.013** |",
                 "| 128 | 8192 | yes | 128 | 128 | 132, clusters of 2 | tile/default | 700.0, 710.0 | "
                 "600.0, 610.0 | **1.165** | 690.0, 700.0 | **1.014** |",
                 "- ours >= 1.0x cuDNN: **3 of 3** (1 shapes without a cuDNN time in every round: "
                 "d = 256 16384 dense)",
                 "- ours >= 1.10x cuDNN at seq >= 4096: **1 of 2**; misses: d = 128 4096 dense 1.028",
                 "- ours >= 1.0x FA4 at seq >= 4096: **2 of 3**; misses: d = 128 4096 dense 0.992"):
        expect(line in out, f"grid_rounds.py: no line '{line}' in:\n{out}")
    with open(md) as f:
        expect(f.read() == out, "grid_rounds.py --markdown differs from its output")
    # gpu_bench.py's per-round table (its timing needs torch and a GPU; its rows do not).
    sys.path.insert(0, bench)
    import gpu_bench
    head = gpu_bench.markdown_head(True)
    bench_row = dict(grid_row(128, 8192, False, 755.0, nan, nan, cluster=2), batch=2, heads=16,
                     num_ctas=128)
    for got, want in ((gpu_bench.markdown_line(bench_row, 689.0, 755.0 / 689.0, (750.0, 755.0 / 750.0)),
                       "| 128 | 8192 | 2 | 16 | no | tile/default | 128, clusters of 2 | 755.0 | 689.0 | "
                       "1.096 | 750.0 | 1.007 |"),
                      (gpu_bench.markdown_line(dict(bench_row, cluster_ctas=1), 689.0, 1.096,
                                               (nan, nan)),
                       "| 128 | 8192 | 2 | 16 | no | tile/default | 128 | 755.0 | 689.0 | 1.096 | - | - |"),
                      (gpu_bench.markdown_line(bench_row, 689.0, 1.096), None)):
        if want is not None:
            expect(got == want, f"gpu_bench.py row: {got!r}, not {want!r}")
        expect(got.count("|") == head[0].count("|") - (2 if want is None else 0),
               f"gpu_bench.py row and header differ in columns: {got!r} / {head[0]!r}")
    other = write_round("other.json", [grid_row(64, 512, True, 99.0, 100.0, nan)])
    rc, out, err = run([py, os.path.join(bench, "grid_rounds.py"), r1, other])
    expect(rc == 2 and "has other shapes than" in err, f"grid_rounds.py shapes: {rc} {err}")
    kernel = write_round("kernel.json", [grid_row(64, 512, True, 99.0, 100.0, nan, bm=192),
                                         grid_row(128, 4096, False, 1.0, 1.0, 1.0),
                                         grid_row(128, 8192, True, 1.0, 1.0, 1.0),
                                         grid_row(256, 16384, False, 1.0, 1.0, 1.0)])
    rc, out, err = run([py, os.path.join(bench, "grid_rounds.py"), r1, kernel])
    expect(rc == 2 and "ran another kernel (block_m 192, not 128)" in err,
           f"grid_rounds.py kernel: {rc} {err}")
    unpaired = write_round("unpaired.json", [grid_row(64, 512, True, 99.0, 100.0, nan),
                                             grid_row(128, 4096, False, 1.0, 1.0, 1.0, cluster=1),
                                             grid_row(128, 8192, True, 1.0, 1.0, 1.0, cluster=1),
                                             grid_row(256, 16384, False, 1.0, 1.0, 1.0)])
    rc, out, err = run([py, os.path.join(bench, "grid_rounds.py"), r1, unpaired])
    expect(rc == 2 and "ran another kernel (cluster_ctas 1, not 2)" in err,
           f"grid_rounds.py clusters: {rc} {err}")
    bad = write_round("bad.json", [grid_row(64, 512, True, -1.0, 100.0, nan)])
    rc, out, err = run([py, os.path.join(bench, "grid_rounds.py"), bad])
    expect(rc == 2 and "'tflops' must be a positive number, not -1.0" in err,
           f"grid_rounds.py bad value: {rc} {err}")
    with open(os.path.join(grid, "broken.json"), "w") as f:
        f.write("{\"rows\": [")
    rc, out, err = run([py, os.path.join(bench, "grid_rounds.py"), os.path.join(grid, "broken.json")])
    expect(rc == 2 and "is not JSON" in err, f"grid_rounds.py broken JSON: {rc} {err}")
    inputs = os.path.join(grid, "inputs.json")
    with open(inputs, "w") as f:
        json.dump({"peer_inputs": "full", "rows": [grid_row(64, 512, True, 99.0, 100.0, nan)]}, f)
    rc, out, err = run([py, os.path.join(bench, "grid_rounds.py"), r1, inputs])
    expect(rc == 2 and "inputs were drawn full, in" in err and "bf16-rand" in err,
           f"grid_rounds.py peer inputs: {rc} {err}")
    with open(inputs, "w") as f:
        json.dump({"peer_inputs": "ones", "rows": [grid_row(64, 512, True, 99.0, 100.0, nan)]}, f)
    rc, out, err = run([py, os.path.join(bench, "grid_rounds.py"), inputs])
    expect(rc == 2 and "'peer_inputs' must be" in err, f"grid_rounds.py bad inputs: {rc} {err}")
    # sanitize_set.sh: refuses bad arguments and a missing compute-sanitizer before running
    # anything; with stand-ins for compute-sanitizer and tilesched it runs every scheduler kind and
    # counts a run clean only on a zero summary and `run: OK` (a racecheck summary with hazards
    # but "(0 errors" in it is not clean).
    script = os.path.join(bench, "sanitize_set.sh")
    rc, out, err = run(["bash", script])
    expect(rc == 2 and "usage: sanitize_set.sh" in err, f"sanitize_set.sh no arguments: {rc} {err}")
    rc, out, err = run(["bash", script, "/nonexistent/tilesched", os.path.join(scratch, "san_x")])
    expect(rc == 2 and "is not an executable tilesched binary" in err, f"sanitize_set.sh binary: {rc} {err}")
    fake_dir = os.path.join(scratch, "san_bin")
    os.makedirs(fake_dir, exist_ok=True)
    fake_ts = os.path.join(fake_dir, "tilesched")
    calls = os.path.join(scratch, "san_calls.txt")
    with open(fake_ts, "w") as f:
        f.write(f'#!/usr/bin/env bash\necho "$*" >> {calls}\necho "run: OK"\n')
    os.chmod(fake_ts, 0o755)
    empty_dir = os.path.join(scratch, "san_empty")  # a PATH without compute-sanitizer
    os.makedirs(empty_dir, exist_ok=True)
    p = subprocess.run([shutil.which("bash"), script, fake_ts, os.path.join(scratch, "san_y")],
                       capture_output=True, text=True, env=dict(os.environ, PATH=empty_dir))
    expect(p.returncode == 2 and "compute-sanitizer not found" in p.stderr,
           f"sanitize_set.sh without compute-sanitizer: {p.returncode} {p.stderr}")
    fake_cs = os.path.join(fake_dir, "compute-sanitizer")
    with open(fake_cs, "w") as f:
        f.write('#!/usr/bin/env bash\ntool=$2; shift 2\n"$@"\n'
                'if [[ "$*" == *planned* && $tool == memcheck ]]; then echo "========= ERROR SUMMARY: 2 errors"\n'
                'elif [[ "$*" == *split_tail* && $tool == racecheck ]]; then '
                'echo "========= RACECHECK SUMMARY: 2 hazards displayed (0 errors, 2 warnings)"\n'
                'elif [[ $tool == racecheck ]]; then '
                'echo "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)"\n'
                'else echo "========= ERROR SUMMARY: 0 errors"; fi\n')
    os.chmod(fake_cs, 0o755)
    if os.path.exists(calls):
        os.remove(calls)
    env = dict(os.environ, PATH=fake_dir + os.pathsep + os.environ.get("PATH", ""))
    p = subprocess.run(["bash", script, fake_ts, os.path.join(scratch, "san_z")], capture_output=True,
                       text=True, env=env)
    expect(p.returncode == 1 and "clean: 43 of 45" in p.stdout,
           f"sanitize_set.sh stand-ins: {p.returncode} {p.stdout[-300:]} {p.stderr}")
    expect("NOT CLEAN  memcheck_planned_d" in p.stdout and "NOT CLEAN  racecheck_split_tail_d128" in p.stdout,
           f"sanitize_set.sh not-clean lines: {p.stdout}")
    with open(calls) as f:
        ran = f.read()
    for kind in ("tile", "queued", "transient", "lpt", "lpt_queued", "planned", "ragged_queued", "split_tail",
                 "split_kv", "stream_k"):
        expect(f"--scheduler {kind}\n" in ran or f"--scheduler {kind} " in ran,
               f"sanitize_set.sh never ran {kind}: {ran}")
    for pages in ("16", "3", "256"):  # pages smaller than a K/V block, and of whole blocks
        expect(f"--page-size {pages}\n" in ran or f"--page-size {pages} " in ran,
               f"sanitize_set.sh never ran pages of {pages}: {ran}")
    expect("--clusters always" in ran, f"sanitize_set.sh never ran the cluster kernel: {ran}")
    expect("--decode " in ran and "--new-tokens 8" in ran,
           f"sanitize_set.sh never ran the decode tiles: {ran}")
    # A pattern keeps the runs whose name matches it, and nothing else runs; one that matches
    # nothing, or is no valid regular expression, is refused.
    os.remove(calls)
    p = subprocess.run(["bash", script, fake_ts, os.path.join(scratch, "san_p"), "paged"],
                       capture_output=True, text=True, env=env)
    expect(p.returncode == 0 and "clean: 6 of 6" in p.stdout,
           f"sanitize_set.sh paged: {p.returncode} {p.stdout[-300:]} {p.stderr}")
    with open(calls) as f:
        ran = f.read().splitlines()
    expect(len(ran) == 6 and all("--page-size" in r for r in ran),
           f"sanitize_set.sh paged ran other runs: {ran}")
    for pattern, message in (("no_such_run", "matches no run"),
                             ("(", "is not a valid extended regular expression")):
        p = subprocess.run(["bash", script, fake_ts, os.path.join(scratch, "san_q"), pattern],
                           capture_output=True, text=True, env=env)
        expect(p.returncode == 2 and message in p.stderr,
               f"sanitize_set.sh pattern {pattern!r}: {p.returncode} {p.stderr}")
    print("ok: grid_rounds.py, gpu_bench.py's table rows, ncu_summary.py, ragged_mix.py, "
          "record_cost_traces.sh, sanitize_set.sh and the argument checks of the device scripts")


if __name__ == "__main__":
    main()
