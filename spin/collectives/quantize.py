"""SwitchML's float32 -> int32 block-exponent quantization, at the workers (its
``cpu_exponent_quantizer``), for switches that only add integers.

Per block of k elements (one packet) each worker takes e = biased exponent of max|x| - 126, so
that max|x| < 2**e; the switch takes the max of e over the workers (an int32 max job); each
worker then sends q = round(x * f) with f = INT32_MAX / (n * 2**e_max), so no sum of n values
can overflow, and reads the result as sum(q) / f. SwitchML sends the exponents one batch ahead
of the data; here the exponents go in a first, small job (one int32 per block) and the data in
a second, so the order of operations is the same and the pipelining is not modelled.

Error against the exact sum, per element: each q is within 1/2 of x f, so |sum(q)/f - sum(x)| <=
n / (2f) = n**2 2**e_max / (2 INT32_MAX); the final rounding to float32 adds at most 2**-24 of
the result (``error_bound``). Each host pass (exponents, quantize, dequantize) costs
``HostConfig.reduce_ps_per_byte`` per input byte, like a host reduction.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..wire import switchml as SW
from .common import align
from .switchml_jobs import SwitchMLJob, install_jobs

INT32_MAX = 2**31 - 1
MIN_EXPONENT = -126          # a zero block (biased exponent 0): never raises the maximum


def n_blocks(count: int, k: int) -> int:
    """Blocks of k elements (one exponent each) covering ``count`` elements."""
    return -(-count // k)


def quantized_bytes(count: int, k: int) -> int:
    """Host bytes of the exponents and the int32 copy."""
    return align(4 * n_blocks(count, k)) + align(4 * count)


def block_exponents(x: np.ndarray, k: int) -> np.ndarray:
    """e per block of k: max|x| < 2**e (SwitchML: biased exponent - 126)."""
    a = np.abs(np.asarray(x, np.float32))
    pad = np.zeros(n_blocks(a.size, k) * k, np.float32)
    pad[:a.size] = a
    m = pad.reshape(-1, k).max(axis=1)
    biased = (m.view(np.uint32) >> 23).astype(np.int64) & 0xFF
    return np.where(biased == 0, MIN_EXPONENT, biased - 126).astype(np.int32)


def scales(exponents: np.ndarray, n: int) -> np.ndarray:
    """f per block: INT32_MAX / (n 2**e)."""
    return INT32_MAX / (n * np.exp2(np.asarray(exponents, np.float64)))


def quantize(x: np.ndarray, exponents: np.ndarray, n: int, k: int) -> np.ndarray:
    """round(x f) as int32, f per block of k from the agreed exponents."""
    f = np.repeat(scales(exponents, n), k)[:x.size]
    return np.rint(np.asarray(x, np.float64) * f).astype(np.int32)


def dequantize(q: np.ndarray, exponents: np.ndarray, n: int, k: int) -> np.ndarray:
    """The float32 values of summed int32 ``q``: q / f per block."""
    f = np.repeat(scales(exponents, n), k)[:q.size]
    return (np.asarray(q, np.float64) / f).astype(np.float32)


def error_bound(inputs: np.ndarray, k: int) -> np.ndarray:
    """Per element, the largest |result - exact sum| the quantized allreduce of ``inputs`` (one
    row per rank) may give (module docstring)."""
    x = np.asarray(inputs, np.float32)
    n = x.shape[0]
    e = np.max([block_exponents(r, k) for r in x], axis=0)
    f = np.repeat(scales(e, n), k)[:x.shape[1]]
    quant = n * (0.5 + 2.0 ** -20) / f
    exact = np.abs(x.astype(np.float64).sum(axis=0))
    return quant + 2.0 ** -24 * (exact + quant) + 2.0 ** -149


@dataclass(frozen=True)
class HostPass:
    """One host-side pass, run at its point of the host program (``HostProgram.call``):
    ``exponents`` writes the block exponents of the data, ``quantize`` the int32 copy with the
    agreed exponents, ``dequantize`` the float32 result from the summed copy."""

    step: str
    data: int
    count: int
    exps: int
    ints: int
    n: int
    k: int

    def __call__(self, host) -> None:
        mem = host.memory
        nb = n_blocks(self.count, self.k)
        data = mem[self.data:self.data + 4 * self.count].view(np.float32)
        exps = mem[self.exps:self.exps + 4 * nb].view(np.int32)
        ints = mem[self.ints:self.ints + 4 * self.count].view(np.int32)
        if self.step == "exponents":
            exps[:] = block_exponents(data, self.k)
        elif self.step == "quantize":
            ints[:] = quantize(data, exps, self.n, self.k)
        else:
            data[:] = dequantize(ints, exps, self.n, self.k)


def add_quantized_steps(sc, progs, hosts, count, data, kick, extra, job, window, opts) -> None:
    """Both jobs (exponent max, then int32 sum) and the three host passes of every rank."""
    k = sc.engine.mtu_bytes // 4
    nb = n_blocks(count, k)
    exps, ints = extra, extra + align(4 * nb)
    n = len(hosts)
    exp_job = SwitchMLJob(job, hosts, nb, exps, kick, SW.MSG_MAX_INT32, min(window, nb))
    sum_job = SwitchMLJob(job + 1, hosts, count, ints, kick, SW.MSG_SUM_INT32, window)
    setup = install_jobs(sc, [exp_job, sum_job], **opts)
    pass_ns = sc.host.reduce_ps_per_byte * 4 * count / 1000
    for p in progs:
        for step, then in (("exponents", exp_job), ("quantize", sum_job), ("dequantize", None)):
            p._add_call(HostPass(step, data, count, exps, ints, n, k))
            p.compute(pass_ns)
            if then is not None:
                setup.start(p, then)
