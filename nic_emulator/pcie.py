"""PCIe DMA timing between NIC and host: a latency plus a bandwidth-serialised transfer, with
independent read and write directions (PCIe is full duplex)."""

from spin.engine import state as S
from spin.engine.tracing import TRK_DMA_READ, TRK_DMA_WRITE, trace_row
from spin.jit import njit


# A completion-queue entry or event the NIC writes to tell the host something: 16 B, like the
# compact CQE format of current RDMA NICs. Written through the same posted-write queue as data,
# so a notification never overtakes the data it announces.
CQE_BYTES = 16


@njit(cache=True, inline="always", _nrt=False)
def transfer_ps(st, dev, nbytes):
    return (nbytes * st.dev[dev, S.D_PCIE_MPS_PER_BYTE] + 999) // 1000


@njit(cache=True, _nrt=False)
def pcie_write(st, dev, t_ps, nbytes):
    """NIC -> host write issued at ``t_ps``; returns when the data is visible in host memory."""
    start = max(t_ps, st.dev[dev, S.D_PCIE_W_BUSY])
    end = start + transfer_ps(st, dev, nbytes)
    st.dev[dev, S.D_PCIE_W_BUSY] = end
    st.dev[dev, S.D_NIC_DMA_W_BYTES] += nbytes
    if st.sc[S.SC_TRACE] != 0:
        trace_row(st, TRK_DMA_WRITE, dev, start, end, nbytes, t_ps,
                  end + st.dev[dev, S.D_PCIE_LAT_PS], 0, 0, 0, 0)
    return end + st.dev[dev, S.D_PCIE_LAT_PS]


@njit(cache=True, _nrt=False)
def pcie_read(st, dev, t_ps, nbytes):
    """NIC <- host read issued at ``t_ps``; returns when the data is in NIC memory
    (request latency, serialised transfer, completion latency)."""
    lat = st.dev[dev, S.D_PCIE_LAT_PS]
    start = max(t_ps + lat, st.dev[dev, S.D_PCIE_R_BUSY])
    end = start + transfer_ps(st, dev, nbytes)
    st.dev[dev, S.D_PCIE_R_BUSY] = end
    st.dev[dev, S.D_NIC_DMA_R_BYTES] += nbytes
    if st.sc[S.SC_TRACE] != 0:
        trace_row(st, TRK_DMA_READ, dev, start, end, nbytes, t_ps, end + lat, 0, 0, 0, 0)
    return end + lat
