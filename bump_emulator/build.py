"""The bump-in-the-wire kind's build: each device's latency, from the topology."""
from __future__ import annotations

import numpy as np

from spin.engine import state as S
from spin.errors import TopologyError
from spin.units import ns


def build_bumps(st, rows: np.ndarray, build) -> None:
    """``rows``: the topology's bump devices; each must have exactly two ports (one link toward
    the host, one toward the switch) and takes its latency from ``Topology.add_bump``."""
    topo = build.scenario.topology
    names = topo.device_names()
    for d in rows.tolist():
        if st.dev[d, S.D_NPORTS] != 2:
            raise TopologyError(f"bump {names[d]!r}: ports = {int(st.dev[d, S.D_NPORTS])}: "
                                f"a bump-in-the-wire device has exactly 2 links")
        st.dev[d, S.D_BUMP_LAT_PS] = ns(topo.latencies_ns[names[d]])
        st.dev[d, S.D_NODE] = d
