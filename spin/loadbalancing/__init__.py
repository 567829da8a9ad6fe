"""Compare load-balancing schemes on the same fabric and workload: the scheme registry
(``schemes``), the figures that tell schemes apart (``metrics``), the side-by-side runner behind
``spin lb`` (``compare``) and pictures (``plots``, needs matplotlib). The port-selection code
itself runs in the switches: ``switch_emulator.lb``."""
from .metrics import FabricFigures, TierLoad, fabric_figures, tier_loads
from .schemes import SCHEMES, Scheme, get_scheme, scheme_names, with_scheme

__all__ = [
           "SCHEMES",
           "FabricFigures",
           "Scheme",
           "TierLoad",
           "fabric_figures",
           "get_scheme",
           "scheme_names",
           "tier_loads",
           "with_scheme",
]
