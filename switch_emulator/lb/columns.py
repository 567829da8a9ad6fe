"""What every switch's port selection owns in ``st.dev``: the scheme a switch runs, its hash
seed and its random state (read by ``switch_emulator.routing``'s dispatch and ``common``).
Declarations only, imported when the engine's tables are laid out (``spin.scheme_parts``)."""
from spin.engine.columns import Declares

DECLARES = Declares(
    owner="switch_emulator.lb",
    dev=[
        ("SW_LB", "port-selection scheme (code: switch_emulator.lb.registry)"),
        ("SW_SEED", "per-switch hash seed (avoids ECMP polarisation across tiers)"),
        ("SW_RNG", "the switch's PRNG state (xorshift64, never 0)"),
    ],
)
