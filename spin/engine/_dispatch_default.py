"""Dispatch used when a fabric has no handler programs. The code generator replaces the import
of this module in the loop template with static dispatch over the user's handlers."""
import numba as nb
import numpy as np


@nb.njit(cache=True, _nrt=False)
def dispatch_handler(kind, prog, inst, ctx, hmems, pkt):
    return np.int64(-1)
