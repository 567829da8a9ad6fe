"""The switch model: output queues at link rate with ECN, trimming and PFC (``spin.engine.ports``),
equal-cost multipath routing with a port-selection hook (``routing``), and handlers with the
NIC's API plus forward/multicast/drop (``actions``; the handler-invoking receive path is
``receive_template.py``, which joins the generated engine module).
"""
