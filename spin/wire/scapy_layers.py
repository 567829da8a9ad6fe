"""scapy mirror of spin's RoCEv2 frames, for crafting and dissecting in tests and tools.

``scapy.contrib.roce`` has BTH (with the ICRC computed in ``post_build``), AETH after
ACKNOWLEDGE and the CNP's padding, but no RETH; this module adds RETH and the two headers of
spin's Ultra-Ethernet-style transport (``PLH`` after a UE WRITE, AETH + ``SACKH`` after a UE
ACK). Bindings are made only by ``bind_spin_layers()`` (idempotent), never at import.
"""

from __future__ import annotations

from typing import Any

from scapy.contrib.roce import AETH, BTH
from scapy.fields import (BitEnumField, BitField, ByteField, IntField, ShortField, XIntField,
                          XLongField, XShortField)
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Packet, Raw, bind_layers

from spin.errors import WireError
from spin.wire import headers as H
from spin.wire import switchml as SW
from spin.wire.roce import node_ip, node_mac


class RETH(Packet):
    """IBTA RDMA Extended Transport Header: target VA, R_Key and DMA length (16 B)."""

    name = "RETH"
    fields_desc = [
        XLongField("va", 0),
        XIntField("rkey", 0),
        IntField("dma_len", 0),
    ]


class PLH(Packet):
    """Placement header of a UE WRITE packet (``spin.wire.headers.PLH``): the message's target
    VA, R_Key and length, and the PSN of its first packet (20 B)."""

    name = "PLH"
    fields_desc = [
        XLongField("va", 0),
        XIntField("rkey", 0),
        IntField("msg_len", 0),
        IntField("msg_psn", 0),
    ]


class SACKH(Packet):
    """Selective-ACK header of a UE ACK, after its AETH (``spin.wire.headers.SACKH``): the
    cumulative PSN, a 64-packet bitmap from ``sack_psn``, the echoed EV and flags (20 B)."""

    name = "SACKH"
    fields_desc = [
        IntField("cum_psn", 0),
        IntField("sack_psn", 0),
        XLongField("bitmap", 0),
        ShortField("ev", 0),
        XShortField("flags", 0),
    ]


class SwitchML(Packet):
    """SwitchML's header as spin carries it: the 8 bytes of the RETH ``va`` field
    (``spin.wire.switchml``); dissect with ``SwitchML(raw(pkt[RETH])[:8])``."""

    name = "SwitchML"
    fields_desc = [
        BitEnumField("msg_type", 0, 4, SW.MSG_NAMES),
        BitField("unused", 0, 4),
        ByteField("job", 0),
        ShortField("pool_index", 0),
        IntField("tsi", 0),
    ]


def bind_spin_layers() -> None:
    """Dissect RETH after BTH on RDMA WRITE FIRST/ONLY (RC and UC), PLH after a UE WRITE,
    AETH + SACKH after a UE ACK. Safe to call repeatedly."""
    for op in sorted(H.RETH_OPCODES):
        if (({"opcode": op}, RETH) not in BTH.payload_guess):
            bind_layers(BTH, RETH, opcode=op)
    if ({"opcode": H.OP_UE_WRITE}, PLH) not in BTH.payload_guess:
        bind_layers(BTH, PLH, opcode=H.OP_UE_WRITE)
    if ({"opcode": H.OP_UE_ACK}, AETH) not in BTH.payload_guess:
        bind_layers(BTH, AETH, opcode=H.OP_UE_ACK)
    if ({}, SACKH) not in AETH.payload_guess:
        bind_layers(AETH, SACKH)   # only a UE ACK has bytes after its AETH


def scapy_roce_frame(src_node: int, dst_node: int, ev: int, opcode: int, dest_qp: int, psn: int,
                     payload: bytes, ack_req: bool = False,
                     reth: tuple[int, int, int] | None = None, ip_id: int = 0) -> Any:
    """The scapy packet of the frame ``spin.wire.build_frame`` builds from the same arguments."""
    needs_reth = opcode in H.RETH_OPCODES
    if needs_reth != (reth is not None):
        raise WireError(f"opcode {opcode:#x} {'needs' if needs_reth else 'takes no'} RETH")
    pad = H.pad_count(len(payload))
    pkt = (Ether(dst=node_mac(dst_node), src=node_mac(src_node), type=H.ETHERTYPE_IPV4)
           / IP(tos=H.IPV4_TOS_ECT0, id=ip_id, flags="DF", ttl=H.IPV4_TTL, proto=H.IPPROTO_UDP,
                src=node_ip(src_node), dst=node_ip(dst_node))
           / UDP(sport=ev, dport=H.ROCE_UDP_PORT, chksum=0)
           / BTH(opcode=opcode, padcount=pad, pkey=H.BTH_PKEY_DEFAULT, dqpn=dest_qp,
                 ackreq=int(bool(ack_req)), psn=psn))
    if reth is not None:
        va, rkey, dma_len = reth
        pkt = pkt / RETH(va=va, rkey=rkey, dma_len=dma_len)
    return pkt / Raw(payload + b"\x00" * pad)
