"""Software prefetch: hints that bring a cache line in before it is read, so that the miss
overlaps with other work instead of stalling it. Hints change no result and never fault."""
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from spin.jit import njit

LINE_BYTES = 64


@intrinsic
def prefetch(typingctx, address):
    """Hint the processor to bring the cache line at integer ``address`` into all cache levels
    for reading (``llvm.prefetch``); no effect on results, no fault on any address."""
    sig = types.void(address)

    def codegen(context, builder, signature, args):
        byte_ptr = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [byte_ptr, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
        ptr = builder.inttoptr(args[0], byte_ptr)
        # read, highest temporal locality, data cache
        builder.call(fn, [ptr, i32(0), i32(3), i32(1)])
        return context.get_dummy_value()
    return sig, codegen


@njit(cache=True, inline="always", _nrt=False)
def row_address(a, i):
    """Address of row ``i`` of the C-contiguous 2-D array ``a``."""
    return np.int64(a.ctypes.data) + i * a.shape[1] * a.itemsize


@njit(cache=True, inline="always", _nrt=False)
def prefetch_lines(address, nbytes):
    """Prefetch the lines of ``nbytes`` from ``address`` (a line-aligned address)."""
    for off in range(0, nbytes, LINE_BYTES):
        prefetch(address + off)
