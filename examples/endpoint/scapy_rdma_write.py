"""Send RDMA WRITEs built with scapy from an external program to NIC handlers in a running
fabric, and print the replies.

Start the fabric first (it waits for this program), from the repository root::

    spin run examples/endpoint/pingpong_endpoint.toml            # or --workers 2
    python examples/endpoint/scapy_rdma_write.py                 # in another terminal

Each frame is Ether / IP / UDP / BTH (RDMA WRITE ONLY, ICRC computed by scapy) / RETH /
payload, from h3's addresses to h0 or h1, whose ping-pong handler echoes it back on qp 2. In
lockstep mode the frames carry virtual send times and the replies their virtual arrival times;
the loop ends when the run does. In real time the script stops after the last reply.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

if __package__ in (None, ""):   # run as a script from anywhere: import spin from this checkout
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from scapy.contrib.roce import BTH  # noqa: E402
from scapy.layers.inet import IP, UDP  # noqa: E402
from scapy.layers.l2 import Ether  # noqa: E402
from scapy.packet import Raw  # noqa: E402

from spin.endpoint import Endpoint  # noqa: E402
from spin.wire.headers import OP_WRITE_ONLY, ROCE_UDP_PORT  # noqa: E402
from spin.wire.roce import node_ip, node_mac  # noqa: E402
from spin.wire.scapy_layers import RETH, bind_spin_layers  # noqa: E402

WRITE_QP = 1       # the handlers' match_qp
BASE_VA = 0x10000


def rdma_write(src: int, dst: int, psn: int, payload: bytes, va: int) -> Ether:
    """One RDMA WRITE ONLY frame from node ``src`` to node ``dst`` (scapy computes the ICRC)."""
    pad = (4 - len(payload) % 4) % 4
    return (Ether(src=node_mac(src), dst=node_mac(dst))
            / IP(src=node_ip(src), dst=node_ip(dst), tos=2, flags="DF", ttl=64)
            / UDP(sport=49152 + psn % 1024, dport=ROCE_UDP_PORT, chksum=0)
            / BTH(opcode=OP_WRITE_ONLY, padcount=pad, pkey=0xFFFF, dqpn=WRITE_QP, psn=psn)
            / RETH(va=va, rkey=0, dma_len=len(payload))
            / Raw(payload + b"\x00" * pad))


def payload_of(i: int, size: int) -> bytes:
    return bytes((i * 7 + k) % 256 for k in range(size))


def run(url: str, count: int, size: int, gap_ns: float = 50.0, quiet: bool = False,
        timeout_s: float = 600.0) -> list[tuple[int, bytes]]:
    """Send ``count`` writes of ``size`` B alternately to h0 and h1; return the replies as
    (virtual arrival ps, frame bytes), printing each."""
    bind_spin_layers()
    replies = []
    with Endpoint(url, timeout_s=timeout_s) as ep:
        if not quiet:
            print(f"attached to {ep.host} (node {ep.node}, {ep.ip}, {ep.mode}) at {url}")
        for i in range(count):
            frame = rdma_write(ep.node, i % 2, i, payload_of(i, size), BASE_VA + i * size)
            ep.send(frame, at_ps=int(i * gap_ns * 1000))
        for data, t_ps in ep.frames():
            replies.append((t_ps, data))
            if not quiet:
                pkt = Ether(data)
                sent = (pkt[RETH].va - BASE_VA) // size          # the write it echoes
                ok = bytes(pkt[RETH].payload)[:size] == payload_of(sent, size)
                print(f"t = {t_ps / 1e6:9.4f} us  {pkt[IP].src} -> {pkt[IP].dst}  qp "
                      f"{pkt[BTH].dqpn}  psn {pkt[BTH].psn}  va {pkt[RETH].va:#x}  "
                      f"{len(data)} B  payload {'echoed' if ok else 'DIFFERS'}")
            if ep.mode == "realtime" and len(replies) == count:
                break
    return replies


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--url", default="tcp://127.0.0.1:5600", help="the fabric's endpoint address")
    p.add_argument("--count", type=int, default=8, help="RDMA WRITEs to send (default 8)")
    p.add_argument("--size", type=int, default=256, help="payload bytes each (default 256)")
    args = p.parse_args(argv)
    replies = run(args.url, args.count, args.size)
    print(f"{len(replies)} replies to {args.count} writes")
    return 0 if len(replies) == args.count else 1


if __name__ == "__main__":
    sys.exit(main())
