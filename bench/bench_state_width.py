"""Cost of a jitted call that takes the engine state, against the number of state arrays.

Why the engine slowed down as its state namedtuple grew (see ``spin.engine.state_ref``): Numba
passes a namedtuple of arrays as one scalar argument per array field (a 2-D array is 9 words:
meminfo, parent, size, itemsize, data, 2 shapes, 2 strides), so every call LLVM does not inline
copies the whole state onto the stack. This script builds a synthetic state of N 2-D int64
arrays and an event loop that calls one of four helpers per event; each helper has a short hot
path and a long cold path (so LLVM keeps it out of line, like the engine's ``tx_done``,
``enqueue_frame``, ``nic_receive``...). It reports, for each N, the words passed per call and
the time per event when the helpers take the namedtuple (``tuple``) or a ``StateRef``
(``ref``, one pointer), and how far above each pushed word its copy is loaded from: when that
distance is just over 4096 bytes, each load matches a store made a few pushes earlier in
address bits 11:0 and waits for it (4K aliasing), which is the cliff. Figures, not a test.

    python bench/bench_state_width.py [--widths 8,16,32,48,52,54,55,56,57,58,60,64,80]
"""
from __future__ import annotations

import argparse
import re
import sys
import time
from collections import namedtuple
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _make_loop(ref: bool):
    lines = ["import numba as nb", "from spin.engine.state_ref import state_ref", ""]
    for h in range(4):
        lines += ["@nb.njit(_nrt=False)", f"def h{h}(st, x, t):",
                  f"    st.a{h}[x & 63, 1] += t",
                  f"    if st.a{h}[x & 63, 2] == -12345:   # never true: the long cold path"]
        for k in range(40):
            a = (h * 7 + k) % 8
            lines += ["        for j in range(8):",
                      f"            st.a{a}[(x + j * {k}) & 63, j] += st.a{(a + 3) % 8}[j, {k % 8}]"]
        lines += [f"    return st.a{h}[x & 63, 1] & 7", ""]
    lines += ["@nb.njit(_nrt=False)", "def loop(state, n):",
              "    st = state_ref(state)" if ref else "    st = state",
              "    acc = 0", "    for i in range(n):", "        k = (i * 7 + acc) & 3",
              "        if k == 0:", "            acc += h0(st, i, i)",
              "        elif k == 1:", "            acc += h1(st, i, i)",
              "        elif k == 2:", "            acc += h2(st, i, i)",
              "        else:", "            acc += h3(st, i, i)", "    return acc"]
    ns: dict = {}
    exec(compile("\n".join(lines), f"<state width {'ref' if ref else 'tuple'}>", "exec"), ns)  # noqa: S102
    return ns["loop"]


def _words_per_call(loop) -> int:
    """Arguments of the out-of-line helper calls in the loop's optimised LLVM IR."""
    ir = loop.inspect_llvm(loop.signatures[0])
    heads = {m.group(1): m.group(0).count(",") + 1
             for m in re.finditer(r"^define [^\n]*@(\w+)\([^\n]*", ir, re.MULTILINE)}
    body = next(chunk for chunk in ir.split("\ndefine ")[1:]
                if "4loop" in chunk.split("\n")[0] and "cpython" not in chunk.split("\n")[0])
    callees = set(re.findall(r"call [^\n]*@(_ZN\w+)\(", body))
    if not callees:
        return 0
    return max(heads.get(c, 0) for c in callees) - 2  # minus Numba's return slot and exc. info


def _copy_distance(loop) -> int:
    """Bytes between the stack word a call's argument copy loads and the word it pushes."""
    found = re.findall(r"pushq\s+(\d+)\(%rsp\)", loop.inspect_asm(loop.signatures[0]))
    return int(max(set(found), key=found.count)) if found else 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--widths", default="8,16,32,48,52,54,55,56,57,58,60,64,80")
    ap.add_argument("--events", type=int, default=2_000_000)
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    print("arrays  words/call(tuple)  copy distance (B)  ns/event(tuple)  words/call(ref)  "
          "ns/event(ref)")
    for n_arrays in (int(w) for w in a.widths.split(",")):
        State = namedtuple("State", [f"a{i}" for i in range(n_arrays)])
        st = State(*(np.zeros((64, 8), np.int64) for _ in range(n_arrays)))
        row = [f"{n_arrays:6d}"]
        for ref in (False, True):
            loop = _make_loop(ref)
            loop(st, 10)
            best = float("inf")
            for _ in range(a.repeats):
                t0 = time.perf_counter()
                loop(st, a.events)
                best = min(best, time.perf_counter() - t0)
            row += [f"{_words_per_call(loop):17d}"]
            if not ref:
                row += [f"{_copy_distance(loop):17d}"]
            row += [f"{best / a.events * 1e9:15.1f}"]
        print("  ".join(row), flush=True)


if __name__ == "__main__":
    main()
