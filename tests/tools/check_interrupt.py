"""Stops `tilesched sim` with SIGTERM, then with SIGINT, while it writes its outputs, and checks that
it dies of that signal (as a shell expects) and leaves no temporary file behind.

usage: check_interrupt.py TILESCHED SCRATCH_DIR
"""
import os
import shutil
import signal
import subprocess
import sys
import time


def temporaries(directory):
    if not os.path.isdir(directory):
        return []
    return [name for name in os.listdir(directory) if ".tmp." in name]


def stop_while_writing(tool, out_dir, sig):
    # 262144 tiles: about 100 MB of output, written over a good fraction of a second.
    args = [tool, "sim", "--batch", "16", "--seq-len", "16384", "--heads", "128", "--kv-heads", "8",
            "--out", out_dir]
    # The default action for the signal, whatever the test runner left (a non-interactive shell
    # ignores SIGINT for background jobs, which a real user's terminal does not).
    child = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             preexec_fn=lambda: signal.signal(sig, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while not temporaries(out_dir):
        if child.poll() is not None:
            sys.exit(f"{sig.name}: sim finished (exit {child.returncode}) before a temporary file "
                     f"was seen: {child.stderr.read().decode()}")
        if time.monotonic() > deadline:
            child.kill()
            sys.exit(f"{sig.name}: no temporary file appeared in {out_dir} within 60 s")
        time.sleep(0.002)
    child.send_signal(sig)
    child.wait(timeout=60)
    if child.returncode != -sig:
        sys.exit(f"{sig.name}: expected death by the signal, got exit status {child.returncode}")
    left = temporaries(out_dir)
    if left:
        sys.exit(f"{sig.name}: temporary files left behind: {left}")


def main():
    tool, scratch = sys.argv[1:3]
    shutil.rmtree(scratch, ignore_errors=True)
    for sig in (signal.SIGTERM, signal.SIGINT):
        stop_while_writing(tool, os.path.join(scratch, sig.name), sig)
    print("ok: no temporary file left by SIGTERM or SIGINT")


if __name__ == "__main__":
    main()
