"""Building one worker's engine state from a scenario: the device columns and the partition of a
fabric's devices over workers.
"""
