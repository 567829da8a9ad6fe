"""A new NIC transport of one's own, end to end: wall time of `spin lb` on a k = 4 fat tree with
a transport from a package written outside spin (published by an entry point) that was never
compiled, then the same transport edited, next to the same command with a shipped transport
(everything cached). The transport is compiled apart from the engine, so none of these
recompiles the engine.

    python bench/bench_new_transport.py [--repeat 3]

Figures only (seconds of wall time, best of --repeat); nothing asserts on them.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.edit_loop import print_best, timed_spin  # noqa: E402

DECLARES = '''
"""Registration and state of {name}: RC that counts its transmit turns."""
from spin.engine.columns import Declares
from spin.transport_api import own_columns
from spin.transports import TransportOption

TRANSPORT = TransportOption("{name}", "RC counting its turns", "{package}.transport",
                            ("{package}.declares",))
DECLARES = Declares(owner=__name__, ntr=[("TURNS", "transmit turns taken")])
COLUMNS = own_columns(DECLARES)
'''

TRANSPORT = '''
"""RC, plus a counter of its own ({tag})."""
from nic_emulator.transports import rc
from nic_emulator.transports.rc import (accepted, admit, carries, find_message, on_control,
                                        on_timeout, on_trimmed)

from .declares import COLUMNS


def tx_step(st, dev, now):
    st.apart_dev[dev, COLUMNS.ntr.TURNS] += {step}
    rc.tx_step(st, dev, now)
'''


def spin_lb(transport: str, folder: Path) -> float:
    return timed_spin(["lb", "--topology", "fat_tree:k=4", "--schemes", "ecmp", "--transport",
                       transport], folder)


def write_package(folder: Path, package: str, step: int) -> None:
    name = package.replace("_", "")
    (folder / package).mkdir(exist_ok=True)
    (folder / package / "__init__.py").write_text("")
    (folder / package / "declares.py").write_text(DECLARES.format(name=name, package=package))
    (folder / package / "transport.py").write_text(TRANSPORT.format(tag=package, step=step))
    dist = folder / f"{package}-0.1.dist-info"
    dist.mkdir(exist_ok=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(
        f"[spin.transports]\n{name} = {package}.declares:TRANSPORT\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    rows = {"spin lb, shipped transport (rc), cached": [],
            "spin lb, new transport of one's own (first run: compiles it)": [],
            "spin lb, the same transport edited (compiles it again)": [],
            "spin lb, the same transport again (cached)": []}
    spin_lb("rc", Path(tempfile.gettempdir()))           # the engine cached before timing
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            package = f"tr_{uuid.uuid4().hex[:10]}"
            name = package.replace("_", "")
            times = [spin_lb("rc", folder)]
            write_package(folder, package, 1)
            times.append(spin_lb(name, folder))
            write_package(folder, package, 2)
            times.append(spin_lb(name, folder))
            times.append(spin_lb(name, folder))
            for row, t in zip(rows.values(), times):
                row.append(t)
    print_best(rows, "the engine is never recompiled: a transport from outside spin is "
                     "compiled apart")


if __name__ == "__main__":
    main()
