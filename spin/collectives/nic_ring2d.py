"""NIC-offloaded two-dimensional rings (``handlers/nic_ring2d.py``): the allreduce of
``spin.collectives.ring2d`` with the NICs reducing and forwarding packet by packet, one
execution context (and QP) per stream. Each rank's host posts its vector to its own NIC, a few
posts per stream, alternating between the streams, and waits for one event per stream.

Why offload it: the host-driven version posts one message per stream and ring step through the
NIC's one send queue, which sends messages in post order; with PFC, a port's backlog pauses the
whole queue, so its four streams share about one port's bandwidth (head-of-line blocking). The
handlers instead send each packet as it is reduced, so the four neighbours' packets interleave
on the NIC's link and every port stays busy.

A NIC driving four ports at 400 Gb/s handles four times the packets of one port: the runs of
``spin.topologies.compare`` give it four PsPIN units (128 HPUs; one PsPIN keeps up with one 400
Gb/s port, Di Girolamo et al., ISCA'21) and an on-package path to accelerator memory faster than
the four ports (``ACCELERATOR_NIC``).

Host memory (every rank): ``[0, S)`` the input, overwritten by the result. Handler memory per
stream: its share of the vector, one MTU slot per packet, plus one per packet of the block it
owns (emulator memory).
"""
from __future__ import annotations

from ..config import EngineConfig, NicConfig, SwitchConfig
from ..errors import ConfigError
from ..handler import ExecutionContext
from .common import (AllreducePlan, align, block_counts, check_args, check_memory, itemsize,
                     offsets, write_inputs)
from .grid import STREAMS, check_streams, default_streams, grid_for

NAME = "nic-ring2d"
DTYPES = ("int32", "float32", "float16", "bfloat16")
# An accelerator's NIC with four 400 Gb/s ports: four PsPIN units, and a path to accelerator
# memory as fast as the four ports together (200 GB/s; HBM3 itself moves 3.35 TB/s, NVIDIA
# H100 SXM datasheet). The allreduce reads S and writes S, half of what a port direction
# carries, so the path is off the critical path; a faster one would only stream the host's
# vector into NIC buffers ahead of the ring.
ACCELERATOR_NIC = {"hpus": 128, "pcie_rate_gbytes_per_s": 200.0}
# Posts per stream, at most: the NIC reads posts in post order, so one post per stream would
# feed the streams one after the other; a few alternating posts start them together. Each post
# costs the host HostConfig.send_overhead_ns, so a post is cut no shorter than what the NIC
# reads meanwhile (``post_pieces``).
MAX_POSTS_PER_STREAM = 8


def plan_memory(n: int, count: int, dtype: str) -> int:
    return align(count * itemsize(dtype))


def programs() -> list:
    """The handler program every rank and stream runs (the engine is compiled for it)."""
    from handlers.nic_ring2d import nic_ring2d_program
    return [nic_ring2d_program()]


def run_configs(n: int, nbytes: int = 0) -> dict:
    """What the runs need. Engine: deep NIC receive queues and tables (every handler send is a
    one-packet message, and the host's vector streams in ahead of the ring). Switches: no PFC,
    and buffers of half the vector per port. The handlers pipeline the phases, so a port
    direction briefly carries two streams (one's first reduce-scatter, another's second) and
    its queue grows; a PFC pause on the one link from a NIC to its accelerator's router would
    stop all four streams for one port's backlog (head-of-line blocking: 3.1x the bound on 16
    accelerators, where deep buffers give 1.1x). The rings never incast, so nothing is lost;
    ``spin.collectives.fabric_bandwidth`` checks that no frame was dropped."""
    base = EngineConfig()
    frames = -(-nbytes // base.mtu_bytes)
    backlog = frames // 2 + 256
    return {"nic": NicConfig(max_inflight_messages=4096),
            "switch": SwitchConfig(pfc=False, port_buffer_bytes=max(1 << 20, nbytes // 2)),
            "engine": EngineConfig(max_rx_messages=max(base.max_rx_messages, 64 * n),
                                   queue_frames=max(base.queue_frames, frames // 2),
                                   buffer_slots=max(base.buffer_slots, n * backlog),
                                   max_events_pending=max(base.max_events_pending,
                                                          n * backlog))}


def post_pieces(scenario, nbytes: int) -> int:
    """Posts of a stream of ``nbytes``: each at least what the NIC reads from host memory while
    the host posts the next one, at most MAX_POSTS_PER_STREAM."""
    per_post = scenario.host.send_overhead_ns * scenario.nic.pcie_rate_gbytes_per_s
    return max(1, min(MAX_POSTS_PER_STREAM, int(nbytes // max(per_post, 1.0))))


def build(scenario, count: int, dtype: str = "float32", *, hosts=None, inputs=None,
          qp: int = 0, streams: int | None = None,
          shape: tuple[int, int] | None = None) -> AllreducePlan:
    """Install the NIC two-dimensional rings on ``scenario``: ``streams`` (1, 2, 4; default 4 on
    a HammingMesh, else 1) execution contexts per rank on QPs ``qp`` .. ``qp + streams - 1``,
    on the grid of ``spin.collectives.grid.grid_for`` (``shape`` overrides it)."""
    from handlers.nic_ring2d import local_address, local_posts, nic_ring2d_program, stream_memory
    hosts = check_args(scenario, count, dtype, hosts)
    if dtype not in DTYPES:
        raise ConfigError(f"{NAME} allreduce dtype={dtype!r}; valid choices: {', '.join(DTYPES)}")
    topo = scenario.topology
    streams = default_streams(topo) if streams is None else check_streams(streams)
    if qp < 0 or qp + streams > scenario.host.qps:
        raise ConfigError(f"{NAME} allreduce needs qps {qp}..{qp + streams - 1}; HostConfig.qps="
                          f"{scenario.host.qps} (raise it or lower qp)")
    mtu = scenario.engine.mtu_bytes
    grid = grid_for(topo, hosts, shape)
    w = itemsize(dtype)
    plan = AllreducePlan(NAME, hosts, count, dtype, 0, 0, 0, plan_memory(len(hosts), count, dtype),
                         tuple(range(qp, qp + streams)))
    check_memory(scenario, plan)
    shares = block_counts(count, streams)
    posts: list[list[list]] = [[] for _ in hosts]
    for k, ((first, sign), c, start) in enumerate(zip(STREAMS[streams], shares, offsets(shares))):
        if c == 0:
            continue
        other = "column" if first == "row" else "row"
        along1, along2 = grid.positions(first, sign), grid.positions(other, sign)
        for rank, host in enumerate(hosts):
            (ring1, i1), (ring2, i2) = along1[rank], along2[rank]
            mem = stream_memory(l1=len(ring1), l2=len(ring2), pos1=i1, pos2=i2,
                                right1=hosts[ring1[(i1 + 1) % len(ring1)]],
                                right2=hosts[ring2[(i2 + 1) % len(ring2)]], qp=qp + k,
                                dtype=dtype, count=c, data_addr=start * w, mtu=mtu,
                                hpus=scenario.nic.hpus)
            scenario.install(ExecutionContext(host, nic_ring2d_program(mem), match_qp=qp + k))
            posts[rank].append([(qp + k, addr, nbytes)
                                for addr, nbytes in local_posts(mem, post_pieces(scenario,
                                                                                 c * w))])
    progs = [scenario.host_program(h) for h in hosts]
    for p in progs:
        p.mark(plan.start_mark)
    for host, p, mine in zip(hosts, progs, posts):
        for j in range(max(len(m) for m in mine)):      # the streams' posts alternate
            for stream_posts in mine:
                if j < len(stream_posts):
                    q, addr, nbytes = stream_posts[j]
                    p.send(host, nbytes, qp=q, local_addr=addr, remote_addr=local_address(addr))
        p.wait_event(len(mine))
        p.mark(plan.end_mark)
    if inputs is not None:
        write_inputs(scenario, plan, inputs)
    return plan
