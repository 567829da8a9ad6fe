"""What a bump-in-the-wire device owns in ``st.dev``: its latency and a frame counter per
direction. Declarations only, imported when the engine's tables are laid out
(``spin.engine.layout``)."""
from spin.engine.columns import Declares

DECLARES = Declares(
    owner="bump_emulator",
    dev=[
        ("BUMP_LAT_PS", "processing latency between arrival and the frame's enqueue"),
        ("BUMP_FWD_0", "frames that entered on port 0 and left by port 1"),
        ("BUMP_FWD_1", "frames that entered on port 1 and left by port 0"),
    ],
)
