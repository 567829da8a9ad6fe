"""The switch model: forwarding by destination with output queues at link rate.

Grows into ECMP/load-balancing policies and in-switch handlers; the per-frame function here is
called from the generated engine module.
"""
