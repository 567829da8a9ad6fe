"""What the user sees while handlers and the engine compile: this code now lives in
``spin.assembly.compile_report``. This module only re-exports its public names, so imports of
``spin.runtime.compile_report`` keep working for one release; new code imports
``spin.assembly.compile_report``."""
from spin.assembly.compile_report import (  # noqa: F401 (re-exported)
    KIND_NAMES,
    compile_progress,
    describe_handler_compile_error,
    is_compile_error,
)

__all__ = ["KIND_NAMES", "compile_progress", "describe_handler_compile_error", "is_compile_error"]
