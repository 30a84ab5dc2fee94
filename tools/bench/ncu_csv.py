"""Reading Nsight Compute's `--csv --metrics` output (one row per kernel and metric), for the
benchmark scripts (clock_sweep.py, gap_split.py): the application's own output around the table is
skipped, each value is converted from the unit ncu printed it in (ns, usecond, hz,
cycle/nsecond, Minst, ...) to the base unit (second, cycle / second, cycle, inst)."""
import csv
import os
import sys

PREFIX = {"n": 1e-9, "u": 1e-6, "m": 1e-3, "K": 1e3, "M": 1e6, "G": 1e9}
BASES = ("s", "second", "cycle", "inst", "hz", "byte", "block", "thread", "warp")


def _fail(prog, msg):
    sys.exit(f"{prog}: {msg}")


def unit_factor(unit, where, prog):
    """What a value in `unit` is worth in the base unit; exits naming prog and where for a unit
    it does not know."""
    def one(u):
        if u in ("", "%") or u.lower() in BASES:
            return 1.0
        if len(u) > 1 and u[0] in PREFIX and u[1:].lower() in BASES:
            return PREFIX[u[0]]
        _fail(prog, f"{where}: unknown unit {u!r}")
    parts = unit.split("/")
    if len(parts) > 2:
        _fail(prog, f"{where}: unknown unit {unit!r}")
    return one(parts[0]) / (one(parts[1]) if len(parts) == 2 else 1.0)


def read_kernels(path, metrics, prog, optional=()):
    """[{metric: value in base units, "name": kernel name}] per profiled kernel, in ID order.
    Every kernel must have every metric; one of `optional` that ncu answered "n/a" is None.
    Exits naming prog when the file is missing, holds no table, or a value is no number."""
    if not os.path.isfile(path):
        _fail(prog, f"{path} does not exist (did ncu run?)")
    with open(path, newline="") as f:
        lines = f.read().splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID",')), None)
    if start is None:
        _fail(prog, f"{path} has no Nsight Compute table (see the .log beside it)")
    kernels = {}
    for row in csv.DictReader(lines[start:]):
        name = row.get("Metric Name")
        if name not in metrics or row.get("ID") is None:
            continue
        k = kernels.setdefault(int(row["ID"]), {"name": row.get("Kernel Name", "?")})
        if name in optional and row.get("Metric Value") == "n/a":
            k[name] = None
            continue
        try:
            value = float(row["Metric Value"].replace(",", ""))
        except (KeyError, ValueError, AttributeError):
            _fail(prog, f"{path}: {name} of kernel {row['ID']} is not a number: "
                        f"{row.get('Metric Value')!r}")
        k[name] = value * unit_factor(row.get("Metric Unit", ""), f"{path}: {name}", prog)
    out = [kernels[i] for i in sorted(kernels)]
    for k in out:
        missing = [m for m in metrics if m not in k]
        if missing:
            _fail(prog, f"{path}: kernel {k['name'][:60]!r} lacks {', '.join(missing)}")
    return out
