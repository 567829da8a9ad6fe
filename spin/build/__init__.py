"""``spin.build`` is now ``spin.assembly`` (many tools take a folder named ``build`` for build
output). This package only re-exports, so imports of ``spin.build`` and of its modules
(``spin.build.state_builder``, ``spin.build.partition``, ``spin.build.cut_cost``) keep working
for one release; new code imports ``spin.assembly``. The old module names are the very modules
of ``spin.assembly``, registered under them, not copies: a moved file keeps a single path."""
import sys

from spin.assembly import cut_cost, partition, state_builder

for _module in (cut_cost, partition, state_builder):
    sys.modules[f"{__name__}.{_module.__name__.rpartition('.')[2]}"] = _module

__all__ = ["cut_cost", "partition", "state_builder"]
