"""The device kinds the engine runs (NIC, switch), registered once here, and the engine's
dispatch over them, generated from the registration.

A kind is a package with a source template that joins the engine module (its receive path
calls handlers, so it must be compiled with the loop; see ``spin.engine.codegen``). The
template defines, for a kind named ``k``, these Numba functions:

``k_receive(st, hmem, dev, gp, slot, now)``
    A frame arrived on global port ``gp``, or (``gp`` = ``ARRIVE_LOOPBACK``) the device sent it
    to itself.
``k_timer(st, hmem, dev, slot, now)``
    A timer a handler of the device set expired; ``slot`` holds the packet it set.
``k_complete(st, hmem, dev, m, now)``
    Every packet of receive message ``m`` was handled: run the completion handler.
``k_port_ready(st, dev, now)``
    The device's egress port can take frames again (a transmission ended, a pause lifted).
``k_actions(st, dev, m, slot, n_commands, end) -> end``
    A handler of the device (on message ``m``, packet ``slot``) ended at ``end`` having issued
    ``n_commands`` commands (``spin.api``): carry them out; returns when the handler's work is
    done.

The kind's code (``D_KIND``) is its index here; ``DEV_NIC`` and ``DEV_SWITCH`` in
``spin.engine.state`` are read from this registry.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..registry import Registry
from .generated import branch_chain

CONTRACT = {
    "receive": "st, hmem, dev, gp, slot, now",
    "timer": "st, hmem, dev, slot, now",
    "complete": "st, hmem, dev, m, now",
    "port_ready": "st, dev, now",
    "actions": "st, dev, m, slot, n_commands, end",
}


@dataclass(frozen=True)
class DeviceKind:
    """A device kind, declared once: everything else (the engine's dispatch, the state
    builder, the compiled sources, per-device counters) reads it from here.

    ``name``: the kind's name (and the prefix of its contract functions). ``templates``: the
    source templates, relative to the project root, that join the engine module (empty: its
    devices run the code of kind ``runs_as``). ``sources``: every file or folder holding
    compiled code of the kind (the Numba cache is keyed on them, ``spin.compiled_sources``).
    ``build``: ``"module:function"`` filling the kind's devices, called by the state builder as
    ``function(st, rows, build)`` with the devices' rows of ``st.dev`` (an int64 array) and a
    ``spin.assembly.device_build.DeviceBuild``; a path, not a function, so that the engine never
    imports the device packages. ``columns``: the ``st.dev`` column groups of
    ``spin.engine.layout`` the build fills (``DEV_NIC``). ``counters``: the ``st.dev`` columns
    (names without ``D_``) that count what a device did, read back per device
    (``Simulation.device_counters``). ``node``: its devices are nodes (endpoints with a host and
    a node id), not forwarding elements. ``programmable``: its devices run what a scenario
    installs on them (handler programs, port-selection schemes, multicast groups); a device of
    a kind that runs none refuses them, rather than holding them unused."""

    name: str
    templates: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    build: str = ""
    columns: tuple[str, ...] = ()
    counters: tuple[str, ...] = ()
    node: bool = False
    runs_as: str = ""
    programmable: bool = True

    @property
    def code(self) -> int:
        """The engine's code (``D_KIND``) of the behaviour its devices run."""
        return DEVICE_KINDS.names().index(self.runs_as or self.name)


NIC = DeviceKind(
    "nic", ("nic_emulator/receive_template.py",), sources=("nic_emulator",),
    build="nic_emulator.build:build_nics",
    columns=("DEV_NIC", "DEV_HOST", "DEV_TRANSPORT"),
    counters=("NIC_DMA_W_BYTES", "NIC_DMA_R_BYTES", "LOOPBACK_FRAMES", "HPU_BUSY_PS",
              "MSGS_ABANDONED", "MSGS_EXPIRED", "TIMERS", "HOST_BUSY_PS", "HOST_EVENT_COUNT"),
    node=True)
SWITCH = DeviceKind(
    "switch", ("switch_emulator/receive_template.py", "switch_emulator/actions.py"),
    sources=("switch_emulator",), build="switch_emulator.build:build_switches",
    columns=("DEV_SWITCH", "DEV_LB"),
    counters=("HPU_BUSY_PS", "MSGS_ABANDONED", "MSGS_EXPIRED", "TIMERS", "SW_FLOWLETS"))

BUMP = DeviceKind(
    "bump", ("bump_emulator/receive_template.py",), sources=("bump_emulator",),
    build="bump_emulator.build:build_bumps", columns=("DEV_BUMP",),
    counters=("BUMP_FWD_0", "BUMP_FWD_1"), programmable=False)

# The kinds the engine runs, in code order (``DEV_NIC`` is 0, ``DEV_SWITCH`` 1, ``DEV_BUMP`` 2).
# A kind placed in a topology but not registered here must run the code of one that is
# (``runs_as``).
DEVICE_KINDS: Registry[DeviceKind] = Registry("device kind", (NIC, SWITCH, BUMP))

_FUNCTION = '''
@njit(cache=True, inline="always", _nrt=False, no_cpython_wrapper=True)
def device_{fn}({params}):
    """``{fn}`` of the device's kind (codes: {codes})."""
    kind = st.dev[dev, S.D_KIND]
{branches}
'''


def templates() -> tuple[str, ...]:
    """Every kind's templates, in code order."""
    return tuple(t for kind in DEVICE_KINDS for t in kind.templates)


def dev_groups() -> dict[str, object]:
    """The column groups of ``st.dev`` by their name in ``spin.engine.layout``: one owner's
    ``Columns``, or a tuple of them (``DEV_TRANSPORT``, ``DEV_LB``: every transport's and
    every shipped scheme's, assembled from their declaration modules)."""
    from . import layout

    def in_dev(v) -> bool:
        members = v if isinstance(v, tuple) and v else (v,)
        return all(any(m is part for part in layout.DEV.parts) for m in members)
    return {n: v for n, v in vars(layout).items() if n.startswith("DEV_") and in_dev(v)}


def check_kind(kind: DeviceKind) -> None:
    """Refuse, naming the field, a kind the engine could not run: one that neither has its
    own code nor runs a registered kind's, or whose column groups or counters are not
    ``st.dev``'s."""
    from ..errors import ConfigError
    from . import layout
    group_names = dev_groups()
    engine_kinds = [k.name for k in DEVICE_KINDS if k.templates]
    target = kind.runs_as or kind.name
    if target not in engine_kinds or (kind.runs_as and kind.templates):
        raise ConfigError(f"device kind {kind.name!r}: runs_as = {kind.runs_as!r}: a kind "
                          f"without templates runs the code of one of {engine_kinds}")
    if not kind.build or ":" not in kind.build:
        raise ConfigError(f"device kind {kind.name!r}: build = {kind.build!r}: give "
                          f"'module:function'")
    for group in kind.columns:
        if group not in group_names:
            raise ConfigError(f"device kind {kind.name!r}: column group {group!r} is not one of "
                              f"st.dev's: {sorted(group_names)}")
    for counter in kind.counters:
        if counter not in layout.DEV.columns:
            raise ConfigError(f"device kind {kind.name!r}: counter {counter!r} is no column of "
                              f"st.dev (names without D_)")


def dispatch_source() -> str:
    """Source of the ``device_*`` dispatch functions for the engine module (the functions they
    call are the kinds' templates', defined in the same module)."""
    names = DEVICE_KINDS.names()
    codes = ", ".join(f"{k} {n}" for k, n in enumerate(names))
    parts = ["# ---- generated by spin.engine.device_kinds.dispatch_source ----",
             "import numba as nb", "from spin.engine import state as S"]
    for fn, params in CONTRACT.items():
        branches = branch_chain("kind", [f"{name}_{fn}({params})" for name in names])
        parts.append(_FUNCTION.format(fn=fn, params=params, codes=codes, branches=branches))
    return "\n".join(parts)
