"""Handlers with the mistakes users make, each on a line marked ``# MISTAKE`` (tests find it)."""
import numpy as np

from spin.api import SUCCESS
from spin.handler import HandlerProgram


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


def program(mistake: str) -> HandlerProgram:
    fn = {"allocate": allocating_payload, "typo": misspelt_payload,
          "type": mistyped_completion}[mistake]
    kind = "completion" if mistake == "type" else "payload"
    return HandlerProgram(f"bad_{mistake}", **{kind: fn}, memory=np.zeros(1, np.int64))
