"""What the flowlet scheme (``switch_emulator.lb.flowlet``) owns in ``st.dev``: its idle gap
and its count of flowlets. Declarations only, imported when the engine's tables are laid out
(``spin.scheme_parts``)."""
from spin.engine.columns import Declares

DECLARES = Declares(
    owner="switch_emulator.lb.flowlet",
    dev=[
        ("SW_FLOWLET_GAP_PS", "idle gap after which a flow may change path"),
        ("SW_FLOWLETS", "flowlets started (a path chosen for a flow afresh)"),
    ],
)
