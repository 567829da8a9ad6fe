"""What bench_new_scheme.py and bench_new_transport.py share: run a `spin` command in a fresh
interpreter that sees a package written into a folder, and print the best of each figure."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path


def timed_spin(args: list[str], folder: Path) -> float:
    """Wall seconds of ``python -m spin ARGS`` with ``folder`` first on the path."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(folder), os.environ.get(
        "PYTHONPATH", "")])}
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "spin", *args], env=env, check=True,
                   capture_output=True, text=True)
    return time.perf_counter() - t0


def print_best(rows: dict[str, list[float]], footer: str) -> None:
    """One line per figure: its best and every run, in seconds; then ``footer``."""
    width = max(map(len, rows))
    print(f"{'figure':{width}s}  {'best (s)':>9s}  {'runs (s)':s}")
    for name, values in rows.items():
        print(f"{name:{width}s}  {min(values):9.2f}  "
              f"{', '.join(f'{v:.2f}' for v in values)}")
    print(footer)
