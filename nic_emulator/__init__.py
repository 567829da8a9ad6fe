"""The sPIN NIC model: transmit engine, PCIe DMA timing, the host, and the NIC's handler action
sink. The handler-invoking receive path (``receive_template.py``) joins the generated engine
module, because it calls the user's handlers statically.
"""
