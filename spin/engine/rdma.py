"""RDMA connection state the engine keeps per (device, peer, QP): next PSN and entropy value."""
import numpy as np

from .hashmap import map_get, map_put
from spin.jit import njit

OPC_WRITE_FIRST = 6
OPC_WRITE_MIDDLE = 7
OPC_WRITE_LAST = 8
OPC_WRITE_ONLY = 10
PSN_MASK = (1 << 24) - 1


@njit(cache=True, inline="always", _nrt=False)
def conn_key(dev, peer_node, qp):
    return (np.int64(dev) << 48) | (np.int64(peer_node & 0xFFFFFF) << 24) | np.int64(qp & 0xFFFFFF)


@njit(cache=True, _nrt=False)
def take_psns(st, dev, dst_node, qp, count):
    """Reserve ``count`` consecutive PSNs on a connection and return the first one."""
    key = conn_key(dev, dst_node, qp)
    psn = map_get(st.tx_keys, st.tx_vals, key)
    if psn < 0:
        psn = 0
    map_put(st.tx_keys, st.tx_vals, key, (psn + count) & PSN_MASK)
    return psn


@njit(cache=True, _nrt=False)
def flow_entropy(src_node, dst_node, qp):
    """Per-QP entropy value carried in the UDP source port (RoCEv2 / Ultra Ethernet style):
    a fixed mix of the connection identifiers, mapped into the dynamic port range 49152-65535."""
    h = (np.int64(src_node) * 0x9E3779B1 + np.int64(dst_node) * 0x85EBCA77
         + np.int64(qp) * 0xC2B2AE3D) & 0xFFFFFFFF
    h ^= h >> 15
    return 0xC000 | (h & 0x3FFF)
