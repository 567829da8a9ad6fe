"""Module-level host-program callbacks for the tests (importable by worker processes)."""
import numpy as np

BUF = 0x1000
N = 512


def double_received(host) -> None:
    vals = host.memory[BUF:BUF + 4 * N].view(np.int32)
    vals *= 2


def broken(host) -> None:
    raise RuntimeError(f"nothing to do on node {host.node}")
