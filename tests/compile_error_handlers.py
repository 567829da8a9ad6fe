"""Handlers with the mistakes users make, each on a line marked ``# MISTAKE`` (tests find it)."""
import numpy as np

from spin.api import SUCCESS
from spin.handler import HandlerProgram
from spin.scenario_code import program_factory


def allocating_payload(ctx, pkt, mem):
    scratch = np.zeros(4, np.int64)  # MISTAKE
    mem[0] += scratch[0]
    return SUCCESS


def misspelt_payload(ctx, pkt, mem):
    mem[0] += pkt_lenght  # noqa: F821  # MISTAKE
    return SUCCESS


def mistyped_completion(ctx, pkt, mem):
    mem[0] = "done"  # MISTAKE
    return SUCCESS


def copying_header(ctx, pkt, mem):
    mine = pkt.copy()  # MISTAKE
    mem[0] += mine[0]
    return SUCCESS


def forgetful_payload(ctx, pkt, mem):  # MISTAKE
    mem[0] += 1


def engine_reaching_payload(ctx, pkt, mem):
    ctx.pool[0][0] = 1  # MISTAKE
    return SUCCESS


def fine_header(ctx, pkt, mem):
    mem[0] += 1
    return SUCCESS


@program_factory
def mixed_program() -> HandlerProgram:
    """A correct header handler next to a payload handler that does not compile."""
    return HandlerProgram("mixed", header=fine_header, payload=misspelt_payload,
                          memory=np.zeros(1, np.int64))


@program_factory
def program(mistake: str) -> HandlerProgram:
    fn = {"allocate": allocating_payload, "typo": misspelt_payload,
          "type": mistyped_completion, "copy": copying_header,
          "no_return": forgetful_payload, "engine": engine_reaching_payload}[mistake]
    kind = {"type": "completion", "copy": "header"}.get(mistake, "payload")
    return HandlerProgram(f"bad_{mistake}", **{kind: fn}, memory=np.zeros(1, np.int64))
