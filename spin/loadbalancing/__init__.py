"""Compare load-balancing schemes on the same fabric and workload: the scheme registry
(``schemes``), the figures that tell schemes apart (``metrics``), the side-by-side runner behind
``spin lb`` (``compare``) and pictures (``plots``, needs matplotlib). The port-selection code
itself runs in the switches: ``switch_emulator.lb``."""
from .metrics import FabricFigures, TierLoad, fabric_figures, tier_loads
from .schemes import SENDER_SCHEMES, Scheme, get_scheme, scheme_names, schemes, with_scheme

__all__ = [
           "SENDER_SCHEMES",
           "FabricFigures",
           "Scheme",
           "TierLoad",
           "fabric_figures",
           "get_scheme",
           "scheme_names",
           "schemes",
           "tier_loads",
           "with_scheme",
]
