"""The NIC transports and entropy modes users pick by name (``[nic.transport] kind`` and
``entropy``), registered once here. A transport's registration names the module of
``nic_emulator.transports`` that implements it; the engine's dispatch, the config check, the
scenario schema's text and the CLI choices all read this registry. (It lives apart from
``spin.config`` so that the device models can read it without importing the whole config.)
"""
from __future__ import annotations

from dataclasses import dataclass

from .registry import Option, Registry


@dataclass(frozen=True)
class TransportOption:
    """A NIC transport, registered once here: its name, a one-line summary, and the module of
    ``nic_emulator.transports`` that implements it (the functions that package's docstring
    lists; the engine's dispatch over them is generated from this registry)."""

    name: str
    summary: str
    module: str


# The NICs' transports and entropy modes (``TransportConfig.kind`` and ``.entropy``); the engine's
# codes (``D_TRANSPORT``, ``D_ENTROPY``) are the indices in these registries. The open-loop
# transport comes first (code 0: the engine's ``TR_OPEN_LOOP``).
TRANSPORTS: Registry[TransportOption] = Registry("transport", (
    TransportOption("none", "open loop, no acknowledgements (a lost packet loses its message)",
                    "nic_emulator.transports.open_loop"),
    TransportOption("rc", "RoCEv2 reliable connection (go-back-N, retransmission timeout, DCQCN)",
                    "nic_emulator.transports.rc"),
    TransportOption("ue", "Ultra-Ethernet-style (out-of-order placement, selective ACKs, "
                    "trimming, NSCC congestion control)", "nic_emulator.transports.ue"),
))
ENTROPIES: Registry[Option] = Registry("entropy mode", (
    Option("per_flow", "one entropy value (UDP source port) per connection"),
    Option("spray", "a new entropy value per packet (oblivious spraying)"),
    Option("reps", "recycle the entropy values of unmarked ACKs, freeze on trims (REPS)"),
))
