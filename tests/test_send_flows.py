"""The open-loop transport keeps a PSN counter per (source, destination, QP) flow in a hash
table sized from the host programs' sends: a fabric with more flows than the old fixed size
(4 per node + 64, in a table of at least 1,024 entries) runs, instead of failing with "lookup
table full" or probing a full table on every send."""
from __future__ import annotations

from spin.runs import run
from spin.simulation import Scenario
from spin.topology import Topology

HOSTS = 40


def test_all_to_all_with_more_flows_than_the_old_table():
    sc = Scenario(Topology.star(HOSTS))
    for src in range(HOSTS):
        hp = sc.host_program(src)
        for dst in range(HOSTS):
            if dst != src:
                hp.send(dst, 64, qp=1 + dst % 3, local_addr=0, remote_addr=64 * src)
        hp.wait_recv(qp=1 + src % 3, count=HOSTS - 1)   # every sender uses the receiver's QP
    assert HOSTS * (HOSTS - 1) > 1024
    result = run(sc)
    assert all(h.finished for h in result.hosts)
    assert len(result.messages) == HOSTS * (HOSTS - 1)
    assert result.drops == {}
