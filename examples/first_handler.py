"""Write your first handler: count and checksum every message a NIC receives, on the NIC.

Run it with ``python examples/first_handler.py`` (add ``--debug`` to run the handlers as plain
Python inside the compiled engine, where ``print`` and ``breakpoint()`` work). The steps:

1. Write handlers as plain Python functions ``f(ctx, pkt, mem) -> int`` at module level. The
   header handler runs once per message (first packet), payload handlers run for every packet on
   the HPUs, the completion handler runs once after the last packet. ``@handler`` declares their
   cost in HPU cycles.
2. Bundle them into a ``HandlerProgram`` with the handler memory they share (a numpy array).
3. Describe a fabric (``Topology``), a ``Scenario`` with host programs and initial host memory, and
   install the program on a NIC with an ``ExecutionContext`` and a match rule.
4. Run it, then read the handler memory, the host memory and the measured figures.
"""
import numpy as np

from spin.api import PROCEED, PROCESS_DATA
from spin.handler import ExecutionContext, HandlerProgram, handler
from spin.simulation import Scenario, Simulation
from spin.topology import Topology

MESSAGES, BYTES, CHECKSUM = 0, 1, 2       # words of the handler memory


# 1. The handlers ----------------------------------------------------------------------------------
@handler(cycles=30)
def count_header(ctx, pkt, mem):
    mem[MESSAGES] += 1
    return PROCESS_DATA                   # go on: run the payload handlers


@handler(cycles=20, cycles_per_byte=0.25)   # touches every byte: declare a per-byte cost
def checksum_payload(ctx, pkt, mem):
    s = 0
    for i in range(pkt.shape[0]):
        s += int(pkt[i])                  # int(): in --debug mode numpy keeps uint8 (wraps at 256)
    mem[BYTES] += pkt.shape[0]
    mem[CHECKSUM] += s
    return PROCEED                        # and still write the packet to host memory (default path)


@handler(cycles=10)
def notify_completion(ctx, pkt, mem):
    return PROCEED                        # tell the host a message arrived (a completion entry)


def main(n_messages: int = 3, size: int = 4096, debug: bool = False) -> dict:
    # 2. The program: three handlers sharing an int64[3] handler memory
    program = HandlerProgram("checksum", header=count_header, payload=checksum_payload,
                             completion=notify_completion, memory=np.zeros(3, np.int64))

    # 3. Two hosts on a switch; host 0 sends n_messages of `size` B to host 1 on qp 5
    sc = Scenario(Topology.star(2))
    data = np.random.default_rng(7).integers(0, 256, n_messages * size, dtype=np.uint8)
    sc.write_host_memory(0, 0, data)
    sender, receiver = sc.host_program(0), sc.host_program(1)
    for k in range(n_messages):
        sender.send(1, size, qp=5, local_addr=k * size, remote_addr=k * size)
    receiver.wait_recv(qp=5, count=n_messages).mark("received")
    ctx = sc.install(ExecutionContext(node=1, program=program, match_qp=5))

    # 4. Run and inspect (debug: the handlers run as plain Python, with the same results)
    sim = Simulation(sc.with_debug_handlers() if debug else sc)
    result = sim.run()
    mem = sim.handler_memory(ctx)
    landed = sim.host_memory(1)[:n_messages * size]
    out = {
        "messages_counted": int(mem[MESSAGES]),
        "bytes_counted": int(mem[BYTES]),
        "checksum": int(mem[CHECKSUM]),
        "expected_checksum": int(data.astype(np.int64).sum()),
        "host_data_ok": bool(np.array_equal(landed, data)),
        "received_at_ps": result.mark("received", 1),
        "hpu_busy_ps": result.totals().hpu_busy_ps,
        "handler_calls": result.nic(1).handler_calls,
    }
    print(f"messages counted by the NIC: {out['messages_counted']}")
    print(f"bytes counted by the NIC:    {out['bytes_counted']:,} B")
    print(f"checksum on the NIC:         {out['checksum']:,} (numpy: {out['expected_checksum']:,})")
    print(f"data in host 1 memory:       {'identical to what host 0 sent' if out['host_data_ok'] else 'WRONG'}")
    print(f"all received at:             {out['received_at_ps'] / 1e6:.3f} µs (virtual time)")
    print(f"HPU busy:                    {out['hpu_busy_ps'] / 1e6:.3f} µs")
    print(f"handler calls:               {out['handler_calls']}")
    ok = (out["messages_counted"] == n_messages and out["bytes_counted"] == n_messages * size
          and out["checksum"] == out["expected_checksum"] and out["host_data_ok"])
    print("OK" if ok else "MISMATCH")
    if not ok:
        raise SystemExit(1)
    return out


if __name__ == "__main__":
    import sys
    main(debug="--debug" in sys.argv[1:])
