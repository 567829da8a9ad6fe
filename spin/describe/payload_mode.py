"""What ``Scenario.payload = "generated"`` allows: runs that never read host memory.

With generated payload no host keeps memory (``spin.wire.payload``), so anything that reads or
writes host bytes is refused before the run, naming what needs them, rather than reading
zeros or failing halfway: bytes written with ``write_host_memory``, host reductions, Python
host calls (they are handed the host's memory) and memory regions asked of the run.
Handlers still see every packet's bytes; a handler DMA into host memory fails with the
handler and packet named, as any out-of-range DMA does.
"""
from __future__ import annotations

from ..errors import ConfigError

PAYLOAD_MODES = ("stored", "generated")


def check_payload_mode(sc, regions=()) -> None:
    """Refuse an unknown ``payload`` value, or a generated-payload scenario that needs bytes."""
    if sc.payload not in PAYLOAD_MODES:
        raise ConfigError(f"payload = {sc.payload!r}: valid: {', '.join(PAYLOAD_MODES)}")
    if sc.payload == "stored":
        return
    from ..engine import state as S
    why = "payload = 'generated' keeps no host memory"
    if sc.host_memory:
        node = sc.host_memory[0][0]
        raise ConfigError(f"{why}, but host {sc.topology.host_label(node)} has bytes written "
                          f"with write_host_memory: use payload = 'stored'")
    if regions:
        raise ConfigError(f"{why}, but the run is asked for host-memory regions {list(regions)[:3]}"
                          f": use payload = 'stored'")
    if sc.engine.host_memory_digests:
        raise ConfigError(f"{why}, but engine.host_memory_digests asks for digests of it: use "
                          f"payload = 'stored'")
    names = {S.OP_REDUCE: "reduce", S.OP_CALL: "call"}
    for node, prog in sorted(sc.host_programs.items()):
        for i, op in enumerate(prog.ops):
            if op[0] in names:
                raise ConfigError(f"{why}, but host {sc.topology.host_label(node)} op {i} "
                                  f"({names[op[0]]}) reads host memory: use payload = 'stored'")
