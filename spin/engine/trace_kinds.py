"""What the engine's trace rows say (``spin.engine.tracing`` writes them): the record kinds,
the run's trace flags and how many rows one event may write. Plain constants, so that a
scenario's description (``spin.describe.trace_options``) and the timeline built from the rows
(``spin.results.timeline``) do not import the compiled writer, nor Numba."""
from . import state as S

TRK_HANDLER = 1
TRK_DMA_WRITE = 2
TRK_DMA_READ = 3
TRK_LINK = 4
TRK_HOST = 5

# st.sc[S.SC_TRACE] bits
TRACE_ON = 1
TRACE_LINKS = 2

# Most rows one event can write: two handlers whose every pending action is a PCIe write plus
# its event, the default-path write, and a frame started on each port of a wide switch.
TRACE_HEADROOM = 4 * S.MAX_PENDING_ACTIONS + 64
