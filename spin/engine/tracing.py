"""Trace records written by the engine while a run is traced (``Scenario.trace``).

Each record is one row of ``st.trace`` (columns ``S.TRC_*``): what happened (``TRK_*``, declared
in ``spin.engine.trace_kinds``), on which
device, from when to when (ps), and up to seven kind-specific arguments. The engine only appends
rows; ``spin.simulation`` drains the table whenever it is nearly full (the event loop stops with
``STATUS_CAPTURE_FULL`` while ``TRACE_HEADROOM`` rows are still free) and
``spin.results.timeline`` turns the rows into spans. Every site checks ``st.sc[S.SC_TRACE]`` first, so an untraced run pays one load
and a branch per site.

Arguments (A..G) per kind:

* ``TRK_HANDLER``: HPU, handler kind, execution context, message source node, QP, PSN, cycles
  charged (the span also covers blocking DMA reads the handler issued).
* ``TRK_DMA_WRITE`` / ``TRK_DMA_READ``: bytes, time issued, time done (data visible in host
  memory / in NIC memory); the span is the transfer on the PCIe link, after queueing behind
  earlier transfers (and, for reads, after the request's latency).
* ``TRK_LINK``: global port, frame bytes, 1 for a priority frame (trimmed header, PFC); the span is
  the frame's serialisation including the Ethernet wire overhead.
* ``TRK_HOST``: opcode, op index, then per op: send (dst, qp, bytes), wait_recv (qp, count),
  wait_event (-, count), reduce (-, -, bytes), mark (mark index), call (callback id). A wait's
  span starts when it is satisfied; ``spin.results.timeline`` extends it back to when the host
  reached it.
"""

from . import state as S
from .trace_kinds import (  # noqa: F401  (the kinds and flags, declared apart)
    TRACE_HEADROOM, TRACE_LINKS, TRACE_ON, TRK_DMA_READ, TRK_DMA_WRITE, TRK_HANDLER, TRK_HOST,
    TRK_LINK,
)
from spin.jit import njit


@njit(cache=True, _nrt=False)
def trace_row(st, kind, dev, t0, t1, a, b, c, d, e, f, g):
    """Append one record; a full table counts the record as lost instead of overwriting."""
    sc = st.sc
    k = sc[S.SC_TRACE_N]
    if k >= st.trace.shape[0]:
        sc[S.SC_TRACE_LOST] += 1
        return
    r = st.trace[k]
    r[S.TRC_KIND] = kind
    r[S.TRC_DEV] = dev
    r[S.TRC_T0] = t0
    r[S.TRC_T1] = t1
    r[S.TRC_A] = a
    r[S.TRC_A + 1] = b
    r[S.TRC_A + 2] = c
    r[S.TRC_A + 3] = d
    r[S.TRC_A + 4] = e
    r[S.TRC_A + 5] = f
    r[S.TRC_A + 6] = g
    sc[S.SC_TRACE_N] = k + 1
