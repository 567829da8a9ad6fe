"""Where a sent packet's payload comes from: host memory, or the generated-payload table
(``spin.wire.payload``) when the scenario stores none."""

from spin.engine import state as S
from spin.engine.pool import copy_bytes
from spin.wire.payload import NODE_STRIDE, PATTERN_BYTES
from spin.jit import njit


@njit(cache=True, _nrt=False)
def read_payload(st, dev, frame, off, host_addr, nbytes):
    """Copy ``nbytes`` of the host's bytes at ``host_addr`` into ``frame`` at ``off``."""
    if st.dev[dev, S.D_PAYLOAD_GEN] != 0:
        start = (host_addr + st.dev[dev, S.D_NODE] * NODE_STRIDE) % PATTERN_BYTES
        copy_bytes(frame, off, st.host_mem, st.sc[S.SC_PATTERN_OFF] + start, nbytes)
    else:
        copy_bytes(frame, off, st.host_mem, st.dev[dev, S.D_HOST_MEM_OFF] + host_addr, nbytes)
