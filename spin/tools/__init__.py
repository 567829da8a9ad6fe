"""The user's tools on top of the library: TOML scenario files, the offload demo and the engine
benchmarks (the ``spin`` command is ``spin.cli``).
"""
