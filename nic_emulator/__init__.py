"""The sPIN NIC model: receive pipeline pieces, transmit engine, PCIe DMA timing and the host.

The handler-invoking receive path itself is part of the generated engine module
(``spin/engine/loop_template.py``), because it calls the user's handlers statically.
"""
