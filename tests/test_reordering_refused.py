"""A per-packet load-balancing scheme over the open-loop transport, whose receiver cannot place
out-of-order packets, is refused before the run with one line naming the scheme and the
transport, when a message spans several packets (the hosts would otherwise wait forever)."""
from __future__ import annotations

import pytest

from spin.config import NicConfig, TransportConfig
from spin.errors import ConfigError
from spin.loadbalancing import with_scheme
from spin.loadbalancing.compare import fabric_scenario
from spin.describe.limits import check_reordering

from .test_cli import spin


def _scenario(nbytes: int, transport: str = "none"):
    sc = fabric_scenario("fat_tree", {"k": 4}, transport=transport)
    sc.host = sc.host.model_copy(update={"memory_bytes": 2 * nbytes})
    sc.host_program(0).send(5, nbytes, qp=1, local_addr=0, remote_addr=nbytes)
    sc.host_program(5).wait_recv(qp=1, count=1)
    return sc


@pytest.mark.parametrize("scheme", ["random_spray", "drill", "adaptive", "spray"])
def test_per_packet_scheme_over_open_loop_transport_is_refused(scheme):
    sc = with_scheme(_scenario(64 * 1024), scheme) if scheme != "spray" else \
        _scenario(64 * 1024)
    if scheme == "spray":   # the sender-side scheme needs acknowledgements for REPS, not spray
        sc.nic = NicConfig(transport=TransportConfig(kind="none", entropy="spray"))
    with pytest.raises(ConfigError) as e:
        check_reordering(sc)
    msg = str(e.value)
    assert "\n" not in msg and "'none'" in msg and scheme in msg and "kind = 'ue'" in msg


def test_one_packet_messages_and_reordering_transports_pass():
    check_reordering(with_scheme(_scenario(4096), "random_spray"))        # cannot reorder
    check_reordering(with_scheme(_scenario(64 * 1024, "ue"), "random_spray"))
    check_reordering(with_scheme(_scenario(64 * 1024), "ecmp"))


def test_spin_lb_refuses_before_running_any_scheme():
    r = spin("lb", "--topology", "fat_tree:k=4", "--size", "64KiB", "--transport", "none",
             "--schemes", "ecmp,drill")
    assert r.returncode != 0
    assert "load balancing 'drill'" in r.stderr and "Traceback" not in r.stderr
    assert "ecmp:" not in r.stdout                     # nothing ran
