"""What sender-side entropy (``nic_emulator.entropy``: spraying, REPS) owns in the engine
state: its PRNG and REPS' EV buffer per connection, and its parameters. Declarations only
(``spin.transports.SHARED_PARTS``)."""
from spin.engine.columns import Declares
from spin.units import ns

REPS_SLOTS = 8       # REPS' circular EV buffer (the paper's and htsim's size)

DECLARES = Declares(
    owner="nic_emulator.entropy",
    conn=[
        ("PRNG", "entropy PRNG state (spray and REPS exploration)"),
        ("REPS_HEAD", "REPS: head of the EV buffer"),
        ("REPS_N", "REPS: EVs in the buffer"),
        ("FREEZE_UNTIL", "REPS: only cached EVs before this time"),
        ("LAST_GOOD", "REPS: latest EV an unmarked ACK echoed (0: none)"),
        ("REPS0", REPS_SLOTS, "REPS: the EV buffer"),
    ],
    trp=[
        ("FREEZE_PS", "REPS: freezing period"),
        ("EV_SET", "spray and REPS exploration: EVs per connection (0: any of the 16,384)"),
    ],
    fill=lambda tc, env: {"FREEZE_PS": ns(tc.reps_freeze_us * 1000), "EV_SET": tc.ev_set_size},
)
