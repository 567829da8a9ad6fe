"""A new load-balancing scheme of one's own, end to end: wall time of `spin lb` on a k = 4 fat
tree with a scheme written outside spin that was never compiled, then the same scheme edited,
next to the same command with a shipped scheme (everything cached). The scheme is compiled
apart from the engine, so none of these recompiles the engine.

    python bench/bench_new_scheme.py [--repeat 3]

Figures only (seconds of wall time, best of --repeat); nothing asserts on them.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

SCHEME = '''
"""Power of two choices, {tag}."""
from spin.port_selection import PortScheme, next_random, port_load


def two_choices(view):
    n = view.ports.shape[0]
    a = view.ports[next_random(view) % n]
    b = view.ports[next_random(view) % n]
    return a if port_load(view, a) <= port_load(view, b) + {slack} else b


SCHEME = PortScheme(name="two_choices", select=two_choices, per_packet=True,
                    summary="the less loaded of two random ports")
'''


def spin_lb(scheme: str, folder: Path) -> float:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(folder), os.environ.get(
        "PYTHONPATH", "")])}
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "spin", "lb", "--topology", "fat_tree:k=4",
                    "--schemes", scheme], env=env, check=True, capture_output=True, text=True)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    rows = {"spin lb, shipped scheme (ecmp), cached": [],
            "spin lb, new scheme of one's own (first run: compiles it)": [],
            "spin lb, the same scheme edited (compiles it again)": [],
            "spin lb, the same scheme again (cached)": []}
    spin_lb("ecmp", Path(tempfile.gettempdir()))          # the engine cached before timing
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            package = f"lb_{uuid.uuid4().hex[:10]}"
            (folder / package).mkdir()
            (folder / package / "__init__.py").write_text("")
            module = folder / package / "two_choices.py"
            ref = f"{package}.two_choices"
            times = [spin_lb("ecmp", folder)]
            module.write_text(SCHEME.format(tag=package, slack=0))
            times.append(spin_lb(ref, folder))
            module.write_text(SCHEME.format(tag=package, slack=1500))
            times.append(spin_lb(ref, folder))
            times.append(spin_lb(ref, folder))
            for row, t in zip(rows.values(), times):
                row.append(t)
    width = max(map(len, rows))
    print(f"{'figure':{width}s}  {'best (s)':>9s}  {'runs (s)':s}")
    for name, values in rows.items():
        print(f"{name:{width}s}  {min(values):9.2f}  "
              f"{', '.join(f'{v:.2f}' for v in values)}")
    print("target: a new scheme end to end <= 3 s (issue 28); the engine is never recompiled")


if __name__ == "__main__":
    main()
