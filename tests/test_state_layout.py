"""The engine tables' layout (``spin.engine.layout``): columns unique and contiguous from 0, the
constants of ``spin.engine.state`` equal to the declarations (also as compiled code sees them),
the allocated arrays as wide as their tables, and the declaration checks themselves."""
from __future__ import annotations

import numba as nb
import numpy as np
import pytest

from spin.engine import layout as L
from spin.engine import state as S
from spin.engine.columns import Columns, Table, export
from spin.engine.handler_abi import CALL_WORDS, MAX_MEMORY_DIMS
from spin.errors import StateLayoutError

# tables that are not arrays of their own: fields of another table's row
_EMBEDDED = {"ntr": ("dev", "NTR"), "trp": ("sc", "TRP")}


def _small_state():
    return S.allocate_state(S.StateSizes(
        n_devs=3, n_ports=4, n_nodes=2, n_switches=1, n_ecs=2, n_progs=1, n_host_ops=4,
        host_mem_total=64, max_hpus=2, max_qp=2, n_marks=1, slot_bytes=128, n_slots=8,
        queue_frames=4, max_events=16, max_rx_messages=4, max_tx_messages=4, txq_cap=4,
        msglog_cap=4, txlog_cap=4, capture_frames=2, outbox_frames=2))


@pytest.mark.parametrize("table", L.TABLES, ids=lambda t: t.name)
def test_columns_are_unique_and_contiguous_from_zero(table: Table):
    cols = sorted(table.columns.values(), key=lambda c: c.index)
    assert len({c.name for c in cols}) == len(cols)
    covered = []
    for c in cols:
        covered += range(c.index, c.index + c.width)
    assert covered == list(range(table.used)), f"{table.name}: gaps or overlaps"
    if table.whole_lines:   # rows of whole 64-byte lines, padded by less than one
        assert table.width % 8 == 0 and 0 <= table.width - table.used < 8, table
    else:
        assert table.width == table.used
    # the owners' parts follow one another in their declared order
    assert [c.owner for c in cols] == [p.owner for p in table.parts for _ in p.specs]


def test_no_column_is_declared_by_two_owners():
    for table in L.TABLES:
        seen: dict[str, str] = {}
        for part in table.parts:
            for spec in part.specs:
                assert spec[0] not in seen, (table.name, spec[0], seen.get(spec[0]), part.owner)
                seen[spec[0]] = part.owner


def test_constants_of_the_state_module_are_the_declared_columns():
    names: dict[str, str] = {}
    for table in L.TABLES + L.RECORDS:
        for name, value in table.constants().items():
            assert name not in names, f"{name} made by tables {names[name]} and {table.name}"
            names[name] = table.name
            got = getattr(S, name)
            assert type(got) is int and got == value, (name, got, value)
    assert S.COLUMNS == {k: getattr(S, k) for k in names}


_FLAT = {"heap"}   # spin.engine.heap: an entry's index is a shift


def test_allocated_arrays_are_as_wide_as_their_tables():
    st = _small_state()
    for table in L.TABLES:
        if table.name in _EMBEDDED:
            parent, field = _EMBEDDED[table.name]
            owner = next(t for t in L.TABLES if t.name == parent)
            assert owner.columns[field].width == table.width
            continue
        arr = getattr(st, table.name)
        if table.name in _FLAT:   # entries of table.width words in one vector
            assert arr.ndim == 1 and arr.shape[0] % table.width == 0, (table.name, arr.shape)
            continue
        assert arr.shape[-1] == table.width, (table.name, arr.shape, table.width)


def test_rows_a_hop_reads_are_whole_lines_and_start_on_one():
    """The tables read per packet have rows of whole cache lines, allocated on a line, and the
    port columns every hop reads lie in the lines the prefetch one event ahead fetches."""
    from spin.engine.prefetch import _PORT_HOT_BYTES
    st = _small_state()
    for name in ("port", "dev", "conn", "msg", "txm", "ev", "calb", "conn_bits"):
        arr = getattr(st, name)
        assert arr.ctypes.data % 64 == 0 and arr.strides[0] % 64 == 0, (name, arr.strides)
    hot = ("DEV", "BUSY", "GEN", "PEER", "PEER_DEV", "RATE_GBPS", "LAT_PS", "UP", "Q_HEAD",
           "Q_N", "Q_BYTES", "Q_LIMIT_BYTES", "HDR_PRIO", "PQ_N", "LOSS_THRESHOLD",
           "ECN_DEQUEUE", "ECN_THRESH", "PAUSED_UNTIL", "BLOCKED_SINCE", "Q_AREA", "Q_LAST_T",
           "PFC_XOFF", "PQ_HEAD", "TRIM_DSCP", "TX_EVENT")
    assert max(L.PORT.index(c) for c in hot) * 8 < _PORT_HOT_BYTES <= 5 * 64


def test_multi_column_fields_match_what_their_users_index():
    assert L.DEV.columns["HC"].width == len(S.HANDLER_KIND_NAMES)
    assert L.PROG.columns["ENTRY"].width == len(S.HANDLER_KIND_NAMES)
    assert L.CUR.columns["CALL"].width == CALL_WORDS
    assert L.EC.columns["MEM_DIMS"].width == MAX_MEMORY_DIMS
    assert L.CONN.columns["REPS0"].width == S.REPS_SLOTS
    assert L.DEV.columns["NTR"].width == S.NTR_COLS
    assert L.SC.columns["TRP"].width == S.TRP_N


def test_clashing_prefixes_are_gone():
    """Capture columns are CAP_*, trace columns TRC_*: C_* are connection columns only and TR_*
    transport kinds only."""
    assert {c for c in S.COLUMNS if c.startswith("C_")} == {"C_" + n for n in L.CONN.columns}
    assert not any(c.startswith("TR_") for c in S.COLUMNS)
    assert {S.CAP_TIME, S.CAP_PORT, S.CAP_LEN} == {0, 1, 2}


@nb.njit(cache=False)
def _compiled_constants():
    return (S.D_KIND, S.D_HPU_BUSY_PS, S.D_NTR + S.NT_MIN_RATE, S.DEV_COLS, S.PT_LOSS_STATE,
            S.C_REPS0, S.SC_TRP + S.TRP_FREEZE_PS, S.CUR_CALL, S.TRC_A, S.ML_FIRST_PSN)


def test_compiled_code_sees_the_declared_constants():
    want = (L.DEV.index("KIND"), L.DEV.index("HPU_BUSY_PS"),
            L.DEV.index("NTR") + L.NT.index("MIN_RATE"), L.DEV.width,
            L.PORT.index("LOSS_STATE"), L.CONN.index("REPS0"),
            L.SC.index("TRP") + L.TRP.index("FREEZE_PS"), L.CUR.index("CALL"),
            L.TRACE.index("A"), L.MSGLOG.index("FIRST_PSN"))
    assert _compiled_constants() == want


def test_views_read_rows_by_name():
    st = _small_state()
    st.dev[1, S.D_HPU_BUSY_PS] = 1234
    st.dev[1, S.D_HC + S.KIND_PAYLOAD] = 7
    st.dev[1, S.D_NTR + S.NT_DUPS] = 3
    st.port[2, S.PT_TX_BYTES] = 99
    view = S.state_view(st)
    dev = view.dev(1)
    assert dev.hpu_busy_ps == 1234 and type(dev.hpu_busy_ps) is int
    assert dev.hc == (0, 7, 0)
    assert dev["HPU_BUSY_PS"] == 1234
    assert view.transport_counters(1).dups == 3
    assert view.port(2).tx_bytes == 99
    assert view.dev(0).local == 1 and view.dev(0).node == -1
    assert list(dev.as_dict())[:2] == ["kind", "seq"]
    assert view.sc().n_devs == 3
    with pytest.raises(AttributeError, match="no column"):
        _ = dev.hpu_bsy_ps


def test_declaration_errors():
    with pytest.raises(StateLayoutError, match="already declared by a"):
        Table("t", "T_", "T_COLS", [Columns("a", [("X", "x")]), Columns("b", [("X", "x")])])
    with pytest.raises(StateLayoutError, match="width"):
        Table("t", "T_", "T_COLS", [Columns("a", [("X", 0, "x")])])
    with pytest.raises(StateLayoutError, match="UPPER_CASE"):
        Table("t", "T_", "T_COLS", [Columns("a", [("x", "x")])])
    with pytest.raises(StateLayoutError, match=r"columns from X on are declared by "
                       r"'nic_emulator.gone', which names no importable module"):
        Table("t", "T_", "T_COLS", [Columns("spin.engine", [("W", "w")]),
                                    Columns("nic_emulator.gone", [("X", "x")])])
    t = Table("t", "T_", "T_COLS", [Columns("spin.engine.heap (a qualifier)",
                                            [("X", "x"), ("Y", 2, "y")])])
    assert t.constants() == {"T_X": 0, "T_Y": 1, "T_COLS": 3}
    with pytest.raises(StateLayoutError, match="already defined"):
        export([t], {"T_X": 5})
    with pytest.raises(StateLayoutError, match="already defined"):
        export([t, Table("u", "T_", "U_COLS", [Columns("switch_emulator", [("X", "x")])])], {})
    with pytest.raises(StateLayoutError, match="3 columns"):
        t.row(np.zeros(4, np.int64))


def test_variant_records_name_every_word():
    """A handler's commands and a host program's operations are declared variants: codes in
    declaration order, each field at a fixed word after the code, none past the record."""
    for rec in L.RECORDS:
        for k, (variant, code) in enumerate(rec.codes.items(), start=1):
            assert code == k
            fields = rec.fields[variant]
            assert len(fields) < rec.width
            for i, f in enumerate(fields):
                assert getattr(S, f"{rec.field_prefix}{variant}_{f}") == 1 + i
    row = L.HOST_OPS.record("SEND", dst=3, qp=1, nbytes=64, remote_addr=128)
    assert row == [S.OP_SEND, 3, 1, 64, 0, 128, 0, 0]
    with pytest.raises(StateLayoutError, match="no field 'size'"):
        L.HOST_OPS.record("SEND", size=64)
    assert "ACT_TIMER" in L.COMMANDS.describe() and "DELAY_PS" in L.COMMANDS.describe()
