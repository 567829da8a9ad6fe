"""``spin.traces`` is now ``spin.trace_formats``: its modules read training-step trace files
(Chakra, PyTorch execution traces, GOAL), and the old name sat beside ``spin.results.timeline``,
which writes a run's own trace. This package only re-exports, so imports of ``spin.traces`` and
of its modules keep working for one release; new code imports ``spin.trace_formats``. The old
module names are the very modules of ``spin.trace_formats``, registered under them, not copies."""
import sys

from spin.trace_formats import (COLLECTIVES, StepTrace, TraceOp, chakra, chakra_writer, goal,
                                model, protowire, pytorch_et, pytorch_ops, read_chakra,
                                read_goal, read_pytorch_et, read_trace, validate)

for _module in (chakra, chakra_writer, goal, model, protowire, pytorch_et, pytorch_ops):
    sys.modules[f"{__name__}.{_module.__name__.rpartition('.')[2]}"] = _module

__all__ = ["COLLECTIVES", "StepTrace", "TraceOp", "read_chakra", "read_goal", "read_pytorch_et",
           "read_trace", "validate"]
