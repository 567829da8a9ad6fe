"""A two-port bump-in-the-wire device (an inline middlebox between a host's NIC and its
switch): every frame that arrives on one port leaves by the other after a fixed processing
latency. A device kind with engine code of its own (``spin.engine.device_kinds.BUMP``), shipped
beside ``nic_emulator`` and ``switch_emulator`` because, like them, its template joins the engine
module and spin must not import it statically."""
