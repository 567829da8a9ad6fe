"""pcap capture of emulated traffic: this code now lives in ``spin.results.capture``. This module
only re-exports its public names, so imports of ``spin.runtime.capture`` keeps working for one
release; new code imports ``spin.results.capture``."""
from spin.results.capture import (  # noqa: F401 (re-exported)
    LINKTYPE_ETHERNET,
    PCAP_MAGIC_NS,
    PCAP_MAGIC_US,
    PCAP_SNAPLEN,
    PcapWriter,
    read_pcap,
)

__all__ = ["LINKTYPE_ETHERNET", "PCAP_MAGIC_NS", "PCAP_MAGIC_US", "PCAP_SNAPLEN", "PcapWriter",
           "read_pcap"]
