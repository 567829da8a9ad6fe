"""Limits a scenario is checked against before anything runs, so that input no run can honour
fails at once with one line naming the field, instead of a traceback minutes later (or never).

* Memory: the engine state is allocated in one piece per array; ``state_bytes`` estimates it
  from the configs (host memory dominates), and a scenario needing more than the memory limit
  is refused when loaded, with the estimate. The limit is ``$SPIN_MEMORY_LIMIT`` (bytes, or
  with a KiB/MiB/GiB/TiB suffix) or by default 3/4 of this machine's RAM and swap. The estimate
  includes the topology's description and its routing tables (``fabric_bytes``). Every
  registered builder but ``custom`` knows its counts from its parameters and is refused before
  it builds anything; topologies built by hand are watched while they build: once the
  description and routing tables alone would exceed the limit, the build stops. An allocation that still fails becomes a ``ConfigError``.
* Host programs are unrolled into an op table (``repeat`` included): the op count is computed
  from the counts before unrolling, and refused above ``MAX_HOST_OPS`` per host.
* Addresses: a host-memory range outside ``HostConfig.memory_bytes`` is refused at load time.
* Output paths: ``--json`` and ``--pcap`` must be writable before the run, not after it.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np

from ..errors import ConfigError
from ..wire.headers import HEADER_SLOT_BYTES

MAX_HOST_OPS = 1 << 22  # per host: 4,194,304 ops of 64 B is a 256 MiB op table


def _gib(n: int) -> str:
    return f"{n / 2**30:,.1f} GiB" if n >= 2**30 else f"{n / 2**20:,.1f} MiB"


def machine_memory_bytes() -> int | None:
    """RAM plus swap of this machine, or None when the platform does not say."""
    try:
        ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None
    swap = 0
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("SwapTotal:"):
                swap = int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return ram + swap


MEMORY_LIMIT_ENV = "SPIN_MEMORY_LIMIT"
_UNITS = {"": 1, "B": 1, "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40,
          "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12}
# A topology's description as Python objects, with the per-port lists and dicts the engine
# state's build makes from it: measured 450-570 B per device with its links once built (fat tree,
# rail-optimised), about twice that while building, and ~100 B per port for ``ports()``;
# rounded up.
TOPOLOGY_BYTES_PER_DEVICE = 600
TOPOLOGY_BYTES_PER_LINK = 800


def parse_bytes(text: str, where: str) -> int:
    """``"17179869184"``, ``"16GiB"``, ``"16 GB"`` as a byte count > 0."""
    t = text.strip().upper().replace(" ", "")
    num = t.rstrip("KMGTIB")
    unit = t[len(num):]
    try:
        value = float(num) * _UNITS[unit]
    except (ValueError, KeyError):
        raise ConfigError(f"{where} = {text!r}: expected a size in bytes, e.g. 17179869184, "
                          f"16GiB or 16GB") from None
    if not 0 < value < 2**63:
        raise ConfigError(f"{where} = {text!r}: must be > 0 B")
    return int(value)


def memory_limit_bytes() -> int | None:
    """The most memory one engine state (and a topology being built) may need: the
    ``SPIN_MEMORY_LIMIT`` environment variable, else 3/4 of RAM plus swap (None: unknown)."""
    given = os.environ.get(MEMORY_LIMIT_ENV, "").strip()
    if given:
        return parse_bytes(given, MEMORY_LIMIT_ENV)
    available = machine_memory_bytes()
    return None if available is None else available * 3 // 4


def _limit_text(limit: int) -> str:
    source = (f"{MEMORY_LIMIT_ENV}" if os.environ.get(MEMORY_LIMIT_ENV, "").strip()
              else f"3/4 of this machine's RAM and swap; set {MEMORY_LIMIT_ENV} to change it")
    return f"the memory limit is {_gib(limit)} ({source})"


def fabric_bytes(n_hosts: int, n_switches: int, n_links: int, epochs: int = 1
                 ) -> dict[str, int]:
    """What a fabric needs besides its engine arrays, in bytes: its description (Python
    objects) and its routing tables (``switch_emulator.route_tables``: each epoch's block index,
    switches x hosts / 64 x 4 B; one shared block per switch allowed; the search's scratch,
    five 256-bit rows per device and one per switch port)."""
    from ..engine.state import ROUTE_BLOCK
    devices = n_hosts + n_switches
    blocks = max(1, -(-n_hosts // ROUTE_BLOCK))
    routing = (epochs * n_switches * blocks * 4 + n_switches * ROUTE_BLOCK * 4
               + devices * 5 * 32 + 2 * n_links * 32)
    return {f"topology ({devices:,} devices and {n_links:,} links as Python objects)":
            TOPOLOGY_BYTES_PER_DEVICE * devices + TOPOLOGY_BYTES_PER_LINK * n_links,
            f"routing tables ({epochs} epoch{'s' if epochs > 1 else ''} x {n_switches:,} "
            f"switches x {blocks:,} blocks of {ROUTE_BLOCK} hosts)": routing}


def _parts_text(parts: dict[str, int], top: int = 3) -> str:
    total = sum(parts.values())
    ranked = sorted(parts.items(), key=lambda kv: -kv[1])
    return ", ".join(f"{k}: {_gib(v)}" for k, v in ranked[:top] if v * 100 >= total)


def check_topology_size(n_hosts: int, n_switches: int, n_links: int = 0,
                        what: str = "") -> None:
    """Refuse a topology whose description and routing tables alone exceed the memory limit.
    Called with the counts a builder's parameters give, before anything is built (``what``
    names the topology), or every 1024 devices while a topology without such counts is built
    (the finished one can only need more)."""
    limit = memory_limit_bytes()
    if limit is None:
        return
    parts = fabric_bytes(n_hosts, n_switches, n_links)
    need = sum(parts.values())
    if need > limit:
        counts = f"{n_hosts:,} hosts, {n_switches:,} switches and {n_links:,} links"
        where = (f"{what}: {counts} need about" if what else
                 f"the topology reached {counts} while being built and needs at least")
        raise ConfigError(f"{where} {_gib(need)} ({_parts_text(parts)}); {_limit_text(limit)}")



def check_frame_pool(engine, what: str) -> None:
    """Refuse tables sized for a fabric (``EngineConfig.for_fabric``) whose frame pool alone,
    each slot at its smallest (headers only), exceeds the memory limit: called with the host
    count a file states, before its topology is built (a million-host htsim file took 48 s and
    3.6 GB to build before the whole state's estimate refused it)."""
    limit = memory_limit_bytes()
    need = engine.buffer_slots * HEADER_SLOT_BYTES
    if limit is not None and need > limit:
        raise ConfigError(f"{what}: the engine's frame pool alone needs at least {_gib(need)} "
                          f"(engine.buffer_slots = {engine.buffer_slots:,} of at least "
                          f"{HEADER_SLOT_BYTES} B); {_limit_text(limit)}")

def send_queue_capacity(sc) -> int:
    """Entries of each NIC's send queue: the most messages one host program posts (sends
    leave the queue when sent, so it never holds more), or ``max_tx_messages`` when handlers
    may post more (puts from host memory). A row per NIC of the largest size would be touched
    a page per NIC: 1 GB at 8,192 hosts for a handful of messages each."""
    cap = sc.engine.max_tx_messages
    if sc.contexts:
        return cap
    from ..engine import state as S
    kinds = [p.op_array()[:, 0] for p in sc.host_programs.values() if p.ops]
    if not kinds:
        return 1
    starts = np.cumsum([0] + [len(k) for k in kinds[:-1]])    # one reduction for all hosts
    sends = np.add.reduceat((np.concatenate(kinds) == S.OP_SEND).astype(np.int64), starts)
    return max(1, min(cap, int(sends.max())))


def state_bytes(sc, slot_bytes: int | None = None) -> dict[str, int]:
    """The big arrays of one engine's state for scenario ``sc``, in bytes, by what sizes them
    (mirrors ``spin.engine.state.allocate_state``; small tables left out), with the topology's
    description and routing tables (``fabric_bytes``). ``slot_bytes``: the frame slot's size
    when known (header slots: ``spin.assembly.state_builder.header_slots``), else an MTU's."""
    from ..engine import state as S
    eng, host, topo = sc.engine, sc.host, sc.topology
    hosts, links = len(topo.hosts), len(topo.links)
    devices = hosts + len(topo.switches)
    slot = slot_bytes or (HEADER_SLOT_BYTES if _header_slots_likely(sc)
                          else ((eng.mtu_bytes + 128 + 63) // 64) * 64)
    stride = 0 if sc.payload == "generated" else ((host.memory_bytes + 63) // 64) * 64
    hpus = max(sc.nic.hpus, sc.switch.hpus_for(_max_ports(topo)))
    txq = send_queue_capacity(sc)
    per_device = (S.DEV_COLS + S.NUM_DROP_REASONS + host.qps
                  + max(len(sc.mark_index), 1)) * 8
    return {
        f"host memory ({hosts} hosts x host.memory_bytes = {host.memory_bytes}, payload "
        f"{sc.payload})": hosts * stride,
        f"frame pool (engine.buffer_slots = {eng.buffer_slots})": eng.buffer_slots * slot,
        f"capture (engine.capture_frames = {eng.capture_frames})":
            (eng.capture_frames if sc.capture_links else 16) * slot,
        f"events (engine.max_events_pending = {eng.max_events_pending})":
            eng.max_events_pending * (S.EV_COLS * 8 + 8)
            + S.calendar_blocks(eng.max_events_pending) * S.CALB_WORDS * 8,
        # two ports per link, each with a data and a priority ring of slot ids
        f"port queues (engine.queue_frames = {eng.queue_frames})": 4 * links * eng.queue_frames * 4,
        f"port table ({2 * links:,} ports)": 2 * links * S.PORT_COLS * 8,
        f"device tables ({devices:,} devices)": devices * per_device,
        f"send queues ({hosts:,} hosts x {txq:,} messages: the most a host program posts, or "
        f"engine.max_tx_messages = {eng.max_tx_messages} with handlers)": hosts * txq * 4,
        # one row per device as wide as the most HPUs of any device (a wide switch's)
        f"HPU table ({devices:,} devices x {hpus:,} HPUs)": devices * hpus * 8,
        **fabric_bytes(hosts, len(topo.switches), links, len(sc.faults) + 1),
        f"messages (engine.max_rx_messages = {eng.max_rx_messages})":
            eng.max_rx_messages * (S.MSG_COLS + S.MSG_STATE_WORDS + 4) * 8,
        f"message log (engine.log_messages = {eng.log_messages})":
            max(eng.log_messages, 1) * (S.MSGLOG_WIDTH + S.TXLOG_WIDTH) * 8,
    }


def _header_slots_likely(sc) -> bool:
    """Will a one-process run of ``sc`` get header slots (``state_builder.header_slots``)? The
    estimate made before building assumes one process; each worker checks its own state again
    with the slot size it really gets."""
    return sc.payload == "generated" and not sc.contexts and not sc.capture_links


def _max_ports(topo) -> int:
    """The most ports any device has (a switch's HPU count follows its ports)."""
    from collections import Counter
    ends = Counter(l.a for l in topo.links)
    ends.update(l.b for l in topo.links)
    return max(ends.values(), default=1)


def _too_large(sc, why: str, slot_bytes: int | None = None) -> ConfigError:
    parts = state_bytes(sc, slot_bytes)
    return ConfigError(f"the engine state needs about {_gib(sum(parts.values()))} ({why}); "
                       f"largest parts: {_parts_text(parts)}")


def check_bytes_fit(need: int, what: str) -> None:
    """Refuse, before allocating, work whose arrays alone (``need`` bytes, described by
    ``what``) exceed the memory limit: one line with the estimate and the limit, not numpy's
    MemoryError after minutes of swapping."""
    limit = memory_limit_bytes()
    if limit is not None and need > limit:
        raise ConfigError(f"{what} need about {_gib(need)}; {_limit_text(limit)}")


def check_fits_in_memory(sc, slot_bytes: int | None = None) -> None:
    """Refuse a scenario whose engine state exceeds the memory limit (``memory_limit_bytes``)."""
    limit = memory_limit_bytes()
    if limit is not None and sum(state_bytes(sc, slot_bytes).values()) > limit:
        raise _too_large(sc, _limit_text(limit), slot_bytes)


def allocation_failed(sc, exc: MemoryError) -> ConfigError:
    """The error for an engine state that the allocator refused."""
    return _too_large(sc, f"allocation failed: {exc}")


def count_ops(ops) -> int:
    """Ops a host program's list unrolls to (``repeat`` multiplies), from the raw TOML values
    and without unrolling; entries that are not valid ops count as one (validation reports
    them)."""
    total = 0
    for raw in ops if isinstance(ops, list) else []:
        if isinstance(raw, dict) and raw.get("op") == "repeat":
            times = raw.get("times")
            inner = count_ops(raw.get("ops"))
            total += (times if isinstance(times, int) and times > 0 else 1) * max(inner, 1)
        else:
            total += 1
    return total


def check_op_count(ops, where: str) -> None:
    n = count_ops(ops)
    if n > MAX_HOST_OPS:
        raise ConfigError(f"{where}: the ops unroll to {n:,} ops (repeat multiplies); at most "
                          f"{MAX_HOST_OPS:,} per host: lower the repeat counts or split the run")


def check_range(field: str, addr: int, nbytes: int, memory_bytes: int) -> None:
    """Refuse the host-memory range [addr, addr + nbytes) outside ``memory_bytes``."""
    if addr + nbytes > memory_bytes:
        raise ConfigError(f"{field} = {addr}: [{addr}, {addr + nbytes}) is outside host memory "
                          f"(host.memory_bytes = {memory_bytes})")


def check_host_op_addresses(sc) -> None:
    """Refuse, before a run, host ops whose host-memory ranges fall outside
    ``HostConfig.memory_bytes`` (scenarios built in Python; files are checked when loaded, naming
    the field). A send's remote range is the destination's business when an execution context
    there may claim the message. Programs are checked a batch at a time with array arithmetic
    (8,192 four-op programs one by one made a few hundred thousand small numpy calls); errors
    name the first offending host in node order, as one by one would."""
    batch: list = []
    rows = 0
    for node, prog in sorted(sc.host_programs.items()):
        ops = prog.op_array()
        if not len(ops):
            continue
        batch.append((node, prog, ops))
        rows += len(ops)
        if rows >= _CHECK_BATCH_OPS:
            _check_programs(sc, batch)
            batch, rows = [], 0
    _check_programs(sc, batch)


_CHECK_BATCH_OPS = 1 << 20    # ops per batch: a 1024-rank ring has six million


def _check_programs(sc, batch: list) -> None:
    """``check_host_op_addresses`` for ``batch`` [(node, program, op array)], in node order."""
    if not batch:
        return
    import numpy as np

    from ..engine import state as S
    size = sc.host.memory_bytes
    widths = {code: 4 if name.endswith("32") else 8 for name, code in S.DTYPE_CODES.items()}
    handled = {c.node for c in sc.contexts}
    topo = sc.topology
    ops = np.concatenate([a for _, _, a in batch])
    first = np.cumsum([0] + [len(a) for _, _, a in batch])
    dst = ops[:, S.HO_SEND_DST]
    bad_dst = (ops[:, 0] == S.OP_SEND) & ((dst < 0) | (dst >= len(topo.hosts)))
    suspect = np.zeros(len(ops), bool)
    suspect[_suspect_ops(ops, size, handled, S)] = True
    owners = np.searchsorted(first, np.flatnonzero(bad_dst | suspect), side="right") - 1
    for b in np.unique(owners).tolist():
        node, prog, _ = batch[b]
        lo, hi = first[b], first[b + 1]
        # a send to no host would stop the engine mid-run: refuse it now
        for i in np.flatnonzero(bad_dst[lo:hi])[:1].tolist():
            raise ConfigError(f"host {topo.host_label(node)} op {i} (send): dst="
                              f"{int(dst[lo + i])} is not a host; hosts: {topo.hosts_text()}")
        for i in np.flatnonzero(suspect[lo:hi]).tolist():
            op = prog.ops[i]
            where = f"host {topo.host_label(node)} op {i}"
            try:
                if op[0] == S.OP_SEND:
                    nbytes = op[S.HO_SEND_NBYTES]
                    check_range("local_addr", op[S.HO_SEND_LOCAL_ADDR], nbytes, size)
                    if op[S.HO_SEND_DST] not in handled:
                        check_range("remote_addr", op[S.HO_SEND_REMOTE_ADDR], nbytes, size)
                elif op[0] == S.OP_REDUCE:
                    nbytes = op[S.HO_REDUCE_COUNT] * widths.get(op[S.HO_REDUCE_DTYPE], 8)
                    check_range("dst_addr", op[S.HO_REDUCE_DST_ADDR], nbytes, size)
                    check_range("src_addr", op[S.HO_REDUCE_SRC_ADDR], nbytes, size)
            except ConfigError as exc:
                kind = "send" if op[0] == S.OP_SEND else "reduce"
                raise ConfigError(f"{where} ({kind}): {exc}") from None


def check_reordering(sc) -> None:
    """Refuse, before a run, a per-packet load-balancing scheme over the open-loop transport
    when a message spans several packets: its packets take different paths, and a receiver
    without out-of-order placement drops a message whose first packet is overtaken (hosts
    would wait forever). One-packet messages cannot be reordered and pass."""
    if sc.nic.transport.kind != "none":
        return
    from ..config import port_schemes
    from ..engine import state as S
    schemes = port_schemes()
    per_packet = [n for n in dict.fromkeys([sc.switch.load_balancing,
                                            *sc.switch_load_balancing.values()])
                  if schemes.get(n, "load_balancing").per_packet]
    if sc.nic.transport.entropy == "spray":
        per_packet.append("spray (entropy)")
    if not per_packet:
        return
    mtu = sc.engine.mtu_bytes
    for node, prog in sorted(sc.host_programs.items()):
        for op in prog.ops:
            if op[0] == S.OP_SEND and op[S.HO_SEND_NBYTES] > mtu:
                per_flow = ", ".join(p.name for p in schemes if not p.per_packet)
                raise ConfigError(
                    f"load balancing {per_packet[0]!r} sends one message's packets over several "
                    f"paths, but transport 'none' drops a message whose packets arrive out of "
                    f"order (host {node} sends {op[S.HO_SEND_NBYTES]:,} B, "
                    f"{-(-op[S.HO_SEND_NBYTES] // mtu)} packets at MTU "
                    f"{mtu}): use [nic.transport] kind = 'ue' (places out-of-order packets) or "
                    f"a per-flow scheme ({per_flow})")


def check_writable(path: str, flag: str, directory: bool) -> None:
    """Make sure an output of the run can be written, before the run (creates the folder)."""
    p = Path(path)
    folder = p if directory else p.parent
    existing = next((a for a in (folder, *folder.parents) if a.exists()), None)
    if existing is not None and not existing.is_dir():
        raise ConfigError(f"{flag} {path}: {existing} is a file, not a folder")
    try:
        if not directory and p.is_dir():
            raise ConfigError(f"{flag} {path}: is a directory; give a file name")
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".spin-write-test-"):
            pass
    except OSError as exc:
        raise ConfigError(f"{flag} {path}: cannot write there: "
                          f"{exc.strerror or exc}") from None


def check_distinct_outputs(inputs: dict[str, str], outputs: list[tuple[str, str]]) -> None:
    """Refuse an output that would overwrite an input of the run (``spin run pp.toml --json
    pp.toml``) or another output of it (``--json out --trace out``: one write lost)."""
    seen = {Path(path).resolve(): what for what, path in inputs.items()}
    for flag, path in outputs:
        where = Path(path).resolve()
        if where in seen:
            raise ConfigError(f"{flag} {path}: is also {seen[where]}; give each output its own "
                              f"file, apart from the run's inputs")
        seen[where] = f"{flag} {path}"


def _suspect_ops(ops, size: int, handled: set, S) -> list[int]:
    """Indices of the ops whose ranges may leave host memory, found with array arithmetic: a
    1024-rank ring has six million ops, too many to check one by one in Python."""
    if not len(ops):
        return []
    import numpy as np
    kind = ops[:, 0]
    send = kind == S.OP_SEND
    nbytes = ops[:, S.HO_SEND_NBYTES]
    checked_remote = ~np.isin(ops[:, S.HO_SEND_DST],
                              np.fromiter((h for h in handled if isinstance(h, int)), np.int64))
    bad = send & ((ops[:, S.HO_SEND_LOCAL_ADDR] + nbytes > size)
                  | (checked_remote & (ops[:, S.HO_SEND_REMOTE_ADDR] + nbytes > size)))
    dtype = ops[:, S.HO_REDUCE_DTYPE]
    width = np.where((dtype == S.DTYPE_CODES["int32"]) | (dtype == S.DTYPE_CODES["float32"]), 4, 8)
    red = kind == S.OP_REDUCE
    bad |= red & (np.maximum(ops[:, S.HO_REDUCE_DST_ADDR], ops[:, S.HO_REDUCE_SRC_ADDR])
                  + ops[:, S.HO_REDUCE_COUNT] * width > size)
    return np.flatnonzero(bad).tolist()
