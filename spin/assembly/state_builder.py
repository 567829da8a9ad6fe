"""Turn a Scenario into the engine's arrays for one worker: sizes, devices and ports, links,
execution contexts and programs, multicast groups, fault controls and routing epochs. Each
device kind fills its own devices' columns (``spin.assembly.device_build``): devices are told
apart by the kind the topology gives them, not by their place in the device order."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..engine import state as S
from ..engine.heap import calendar_shift
from ..engine.pool import slot_bytes_for_mtu as _slot_rule
from ..engine.prefetch import prefetching
from .device_build import DeviceBuild, build_devices
from ..errors import ConfigError
from ..handler import same_program
from ..describe.limits import allocation_failed, check_fits_in_memory, send_queue_capacity
from ..units import ns
from ..wire.payload import pattern_table
from ..wire.headers import HEADER_SLOT_BYTES

HOST_MEM_ALIGN = 64
MAX_SCHEME_MEMORY_BYTES = 4 << 30   # all switches' port-selection memory (st.lb_table)


@dataclass
class BuiltState:
    st: S.EngineState
    ec_order: list            # ExecutionContext per engine EC row
    port_of_link: dict[int, tuple[int, int]]


def _device_index(scenario, node) -> int:
    names = scenario.topology.device_names()
    if isinstance(node, str):
        return names.index(node)
    return int(node)


def _tracing(scenario):
    return getattr(scenario, "tracing", None)


def context_order(scenario) -> list:
    """Execution contexts in engine row order: grouped per device, in installation order."""
    return [c for _, c in sorted(enumerate(scenario.contexts),
                                 key=lambda ic: (_device_index(scenario, ic[1].node), ic[0]))]


def slot_bytes_for_mtu(mtu_bytes: int) -> int:
    """A frame slot holding an MTU of payload and its headers, in whole cache lines (the
    engine's own rule, evaluated here in Python)."""
    return int(getattr(_slot_rule, "py_func", _slot_rule)(mtu_bytes))


def header_slots(sc, programs: list, standalone: bool) -> bool:
    """Can frame slots hold headers only? When the payload is generated and nothing can observe a
    frame's bytes: no handler on any device, no capture, and no attached host (``standalone``:
    frames leave this engine only for other spin engines, which generate the same payload).
    Then a frame in flight costs ``HEADER_SLOT_BYTES`` instead of a slot of an MTU: at 8,192
    hosts the 300,000 frames queued at once touched 1.3 GB of slots, and their first touch was a
    third of the loop's time; and a frame crossing to another worker is sent as its headers."""
    return (sc.payload == "generated" and standalone and not programs and not sc.contexts
            and not sc.capture_links)


def build_state(scenario, programs: list, local: set[int],
                standalone: bool = False) -> BuiltState:
    """The engine state of ``scenario`` for the devices in ``local``; ``standalone``: this
    process runs every device and nothing outside it sees frames (see ``header_slots``)."""
    from nic_emulator.build import (configure_transport, loss_prng_seed, send_flows,
                                    transport_connections)
    from switch_emulator.build import configure_port
    from switch_emulator.route_tables import RouteTables
    from switch_emulator.lb.registry import schemes_apart, switch_schemes, table_entries
    sc, topo = scenario, scenario.topology
    eng, nic, host, sw = sc.engine, sc.nic, sc.host, sc.switch
    names = topo.device_names()
    kinds = topo.device_kinds()
    nodes = [d for d, kind in enumerate(kinds) if kind.node]
    n_devs, n_nodes, n_sw = len(names), len(nodes), len(kinds) - len(nodes)
    ports = topo.ports()
    n_ports = sum(len(p) for p in ports.values())
    full_slot_bytes = slot_bytes_for_mtu(eng.mtu_bytes)
    headers_only = header_slots(sc, programs, standalone)
    slot_bytes = HEADER_SLOT_BYTES if headers_only else full_slot_bytes
    generated = sc.payload == "generated"
    host_stride = 0 if generated else \
        ((host.memory_bytes + HOST_MEM_ALIGN - 1) // HOST_MEM_ALIGN) * HOST_MEM_ALIGN
    pattern = pattern_table(full_slot_bytes) if generated and not headers_only \
        else np.zeros(0, np.uint8)
    n_ops = sum(len(p.ops) for p in sc.host_programs.values())
    controls, epochs = _fault_plan(sc)
    mcast_ports = sum(len(p) for _, p in sc.multicast_groups)
    if any(not isinstance(c.node, int) and not kinds[names.index(c.node)].node
           for c in sc.contexts) \
            and n_devs ** 3 * (1 << 24) >= 1 << 62:
        raise ConfigError(f"switch handlers support fabrics of up to 6,500 devices; this one has "
                          f"{n_devs}")
    sizes = S.StateSizes(
        n_devs=n_devs, n_ports=n_ports, n_nodes=n_nodes, n_switches=n_sw,
        n_ecs=len(sc.contexts), n_progs=len(programs), n_host_ops=n_ops,
        host_mem_total=host_stride * n_nodes + len(pattern), max_hpus=max([nic.hpus] + [sw.hpus_for(len(ports[s])) for s in topo.switches]), max_qp=host.qps,
        n_marks=max(len(sc.mark_index), 1), slot_bytes=slot_bytes, n_slots=eng.buffer_slots,
        queue_frames=eng.queue_frames, max_events=eng.max_events_pending,
        max_rx_messages=eng.max_rx_messages, max_tx_messages=eng.max_tx_messages,
        txq_cap=send_queue_capacity(sc), msglog_cap=max(eng.log_messages, 1),
        txlog_cap=max(eng.log_messages, 1),
        capture_frames=eng.capture_frames if sc.capture_links else 16, outbox_frames=4096,
        n_route_epochs=len(epochs) + 1, n_mcast_groups=max(len(sc.multicast_groups), 1),
        n_mcast_ports=max(mcast_ports, 1), n_control=max(len(controls), 1),
        n_route_groups=1, n_route_ports=1,
        trace_records=_tracing(sc).buffer_records if _tracing(sc) is not None else 1,
        n_qsamples=max(4096, 4 * n_ports) if eng.queue_sample_ns > 0 else 16,
        n_conns=transport_connections(sc), n_send_flows=send_flows(sc),
        calendar_shift=calendar_shift(n_ports, eng.mtu_bytes + 128,
                                      max((l.config.rate_gbps for l in topo.links), default=100)))
    # the estimate (routing tables and topology included) before anything large is built;
    # Python-built scenarios too: refused with the estimate
    check_fits_in_memory(sc, slot_bytes)
    # routing first: its group table sizes the arrays
    wiring = topo.port_arrays()
    port_of_link = {i: (a, b) for i, (a, b) in enumerate(wiring.link_ports.tolist())}
    tables = RouteTables(n_sw, n_nodes)
    tables.add_epoch(wiring.port_dev, wiring.port_local, wiring.peer, np.ones(n_ports, bool),
                     wiring.transit)
    for epoch_peer, epoch_up in epochs:
        tables.add_epoch(wiring.port_dev, wiring.port_local, epoch_peer, epoch_up,
                         wiring.transit)
    used_schemes = set(switch_schemes(sc))
    lb_entries = table_entries(used_schemes, tables.n_groups)
    # a scheme compiled apart gets its own rows of memory on every switch, even of one entry
    lb_rows = n_sw if lb_entries > 1 or schemes_apart(used_schemes) else 1
    if lb_rows * lb_entries * S.LB_WORDS * 8 > MAX_SCHEME_MEMORY_BYTES:
        raise ConfigError(f"load balancing {', '.join(sorted(used_schemes))}: {lb_entries:,} "
                          f"entries of scheme memory on each of {lb_rows:,} switches need "
                          f"{lb_rows * lb_entries * S.LB_WORDS * 8 / 2**30:.1f} GiB; at most "
                          f"{MAX_SCHEME_MEMORY_BYTES / 2**30:.0f} GiB")
    from ..transport_api import own_transport_layout
    own = own_transport_layout(nic.transport.kind)   # a transport compiled apart: its tables
    if own is not None:
        sizes = S.StateSizes(**{**sizes.__dict__, "apart_conn_cols": own.conn.width,
                                "apart_dev_cols": own.dev_width,
                                "apart_params": own.params.width})
    sizes = S.StateSizes(**{**sizes.__dict__, "n_route_groups": max(tables.n_groups, 1),
                            "n_route_ports": max(tables.n_ports, 1),
                            "n_route_blocks": max(tables.n_blocks, 1),
                            "lb_rows": max(lb_rows, 1), "lb_entries": lb_entries})
    try:
        st = S.allocate_state(sizes)
    except MemoryError as exc:
        raise allocation_failed(sc, exc) from None
    st.sc[S.SC_MTU] = eng.mtu_bytes
    st.sc[S.SC_HEADER_SLOTS] = 1 if headers_only else 0
    # a header slot has no payload for an ICRC to cover (spin.engine.pool.ensure_icrc)
    st.sc[S.SC_CHECK_ICRC] = 1 if eng.check_icrc and not headers_only else 0
    st.sc[S.SC_TRIM_DSCP] = sw.trim_dscp if sw.trim else 0
    st.sc[S.SC_FLOW_KEY_MAX_QP] = 1 << 24
    st.sc[S.SC_TRACE] = _tracing(sc).flags if _tracing(sc) is not None else 0
    st.sc[S.SC_MSG_TIMEOUT_PS] = ns(eng.message_timeout_ns)
    st.sc[S.SC_SAMPLE_PS] = ns(eng.queue_sample_ns)
    st.sc[S.SC_PREFETCH] = 1 if prefetching(eng.prefetch, sc.n_hosts) else 0
    tables.write(st)
    # devices and ports, and both directions of every link, as whole columns
    nports = np.diff(wiring.first)
    st.dev[:, S.D_PORT0] = wiring.first[:-1]
    st.dev[:, S.D_NPORTS] = nports
    st.dev[:, S.D_LOCAL] = 0
    st.dev[sorted(local), S.D_LOCAL] = 1
    st.port[:, S.PT_DEV] = wiring.port_dev
    st.port[:, S.PT_LOCAL_IDX] = wiring.port_local
    ends = wiring.link_ports
    configs = [link.config for link in topo.links]
    for col, values in ((S.PT_RATE_GBPS, [c.rate_gbps for c in configs]),
                        (S.PT_LAT_PS, [ns(c.latency_ns) for c in configs])):
        values = np.asarray(values, np.int64)
        st.port[ends[:, 0], col] = values
        st.port[ends[:, 1], col] = values
    st.port[:, S.PT_PEER] = wiring.peer
    st.port[:, S.PT_PEER_DEV] = np.where(wiring.peer >= 0, wiring.port_dev[wiring.peer], -1)
    st.port[:, S.PT_REMOTE] = 1 - st.dev[wiring.port_dev[wiring.peer], S.D_LOCAL]
    for i, c in enumerate(configs):
        if c.loss_rate > 0:
            for src, direction in ((ends[i, 0], 0), (ends[i, 1], 1)):
                st.port[src, S.PT_LOSS_THRESHOLD] = max(1, int(c.loss_rate * 2**32))
                st.port[src, S.PT_LOSS_STATE] = loss_prng_seed(c.loss_seed, i, direction)
    for i in sc.capture_links:
        st.port[ends[i], S.PT_CAPTURE] = 1
    # a queue's byte limit is that of its frames at full size, whatever the slots store
    st.port[:, S.PT_Q_LIMIT_BYTES] = eng.queue_frames * full_slot_bytes
    st.port[:, S.PT_BLOCKED_SINCE] = -1
    st.port[:, S.PT_TRIM_DSCP] = -1     # no trimming unless the device kind's build sets it
    build_devices(st, kinds, DeviceBuild(sc, host_stride, generated))
    st.sc[S.SC_PATTERN_OFF] = host_stride * n_nodes
    st.host_mem[host_stride * n_nodes:host_stride * n_nodes + len(pattern)] = pattern
    host_rates = [int(st.port[st.dev[d, S.D_PORT0], S.PT_RATE_GBPS]) for d in nodes]
    # the fabric's transport parameters, and each node's transport (node ids are the rows
    # 0..n_nodes - 1: the routing tables and host memory are indexed by them)
    configure_transport(st, n_nodes, nic, max(host_rates, default=100), eng.mtu_bytes)
    # a port's arrival delay includes the pipeline of the switch at its far end (ports.py)
    peer = wiring.peer
    linked = np.flatnonzero(peer >= 0)
    peer_dev = wiring.port_dev[peer[linked]]
    at_switch = st.dev[peer_dev, S.D_KIND] == S.DEV_SWITCH
    st.port[linked[at_switch], S.PT_LAT_PS] += st.dev[peer_dev[at_switch], S.D_SW_LAT_PS]
    for (name, toward), fields in sc.port_overrides.items():
        cfg = sc.port_switch_config(name, toward, fields)
        for i, link in enumerate(topo.links):
            if {link.a, link.b} == {name, toward}:
                configure_port(st, port_of_link[i][0 if link.a == name else 1], cfg)
    for node, addr, raw in sc.host_memory:
        off = node * host_stride + addr
        st.host_mem[off:off + len(raw)] = np.frombuffer(raw, np.uint8)
    k = 0
    for node in sorted(sc.host_programs):
        ops = sc.host_programs[node].op_array()
        st.dev[node, S.D_HOST_OP_FIRST] = k
        st.dev[node, S.D_HOST_OP_COUNT] = len(ops)
        if len(ops):
            st.host_ops[k:k + len(ops)] = ops
            st.dev[node, S.D_HOST_STATE] = S.HOST_RUNNING
        k += len(ops)
    # execution contexts, grouped per device in installation order
    inst_count = [0] * len(programs)
    ordered = list(enumerate(context_order(sc)))
    ec_order = []
    for e, (_, ctx) in enumerate(ordered):
        d = _device_index(sc, ctx.node)
        p = next(i for i, q in enumerate(programs) if same_program(q, ctx.program))
        if st.dev[d, S.D_EC_COUNT] == 0:
            st.dev[d, S.D_EC_FIRST] = e
        st.dev[d, S.D_EC_COUNT] += 1
        st.ec[e, S.EC_PROG] = p
        st.ec[e, S.EC_INST] = inst_count[p]
        inst_count[p] += 1
        (st.ec[e, S.EC_MATCH_QP], st.ec[e, S.EC_MATCH_RKEY], st.ec[e, S.EC_MATCH_SRC],
         st.ec[e, S.EC_MATCH_DST], st.ec[e, S.EC_MATCH_UDP_DPORT],
         st.ec[e, S.EC_MATCH_HDR_TYPE]) = ctx.match_row()
        ec_order.append(ctx)
    for p, prog in enumerate(programs):
        for kind, fn in enumerate(prog.handlers()):
            st.prog[p, S.PR_HAS + kind] = 0 if fn is None else 1
            cost = prog.cost(kind)
            st.prog[p, S.PR_CYCLES + kind] = cost.cycles
            st.prog[p, S.PR_MCPB + kind] = cost.millicycles_per_byte
    # multicast groups (local ports of their switch)
    k = 0
    for g, (_switch, group_ports) in enumerate(sc.multicast_groups):
        st.mgroup[g] = (k, len(group_ports))
        st.mport[k:k + len(group_ports)] = group_ports
        k += len(group_ports)
    for r, row in enumerate(controls):
        st.ctl[r] = row
    return BuiltState(st, ec_order, port_of_link)


def _fault_plan(scenario) -> tuple[list[tuple[int, int, int, int, int]],
                                   list[tuple[np.ndarray, np.ndarray]]]:
    """Control rows (kind, a, b, c, time_ps) and, per distinct fault time, the wiring (peer of
    every port, port up) that routing converges to."""
    topo = scenario.topology
    faults = sorted(enumerate(scenario.faults), key=lambda f: (f[1].at_ns, f[0]))
    if not faults:
        return [], []
    link_ports = topo.link_ports()
    n_ports = sum(len(p) for p in topo.ports().values())
    ends = {i: list(p) for i, p in link_ports.items()}    # current (a, b) ports of each link
    peer = np.full(n_ports, -1, np.int64)
    for pa, pb in link_ports.values():
        peer[pa], peer[pb] = pb, pa
    up = np.ones(n_ports, bool)
    rows: list[tuple[int, int, int, int, int]] = []
    epochs: list[tuple[np.ndarray, np.ndarray]] = []
    conv_ps = ns(scenario.switch.route_convergence_ns)
    i = 0
    while i < len(faults):
        t_ns = faults[i][1].at_ns
        while i < len(faults) and faults[i][1].at_ns == t_ns:
            f = faults[i][1]
            t = ns(f.at_ns)
            a, b = ends[f.link]
            if f.kind == "down":
                up[a] = up[b] = False
                rows.append((S.CTL_LINK_DOWN, a, b, 0, t))
            elif f.kind == "up":
                up[a] = up[b] = True
                rows.append((S.CTL_LINK_UP, a, b, 0, t))
            elif f.kind == "rate":
                rows.append((S.CTL_SET_RATE, a, b, f.rate_gbps, t))
            else:
                c, d = ends[f.other]
                ends[f.link], ends[f.other] = [a, d], [c, b]
                for x, y in ((a, d), (d, a), (c, b), (b, c)):
                    peer[x] = y
                    rows.append((S.CTL_SET_PEER, x, y, 0, t))
            i += 1
        epochs.append((peer.copy(), up.copy()))
        rows.append((S.CTL_ROUTE_EPOCH, len(epochs), 0, 0, ns(t_ns) + conv_ps))
    return [(k, a, b, c, t) for (k, a, b, c, t) in rows], epochs
