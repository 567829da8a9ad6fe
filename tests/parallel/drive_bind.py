"""Runs a keyed toy fabric listening on every interface, for the multi-machine test.

Usage: python drive_bind.py KEY_FILE N_WORKERS N_REMOTE
Prints "ENDPOINT <ep>" first, then "RESULT <json of merged device checksums>" or "ERROR <msg>".
"""

import json
import sys

import conftest  # noqa: F401  (import paths)
from toy_program import ToySpec, merged_devices

from spin.errors import SpinError
from spin.parallel import Coordinator, CoordinatorConfig

SPEC = ToySpec(n_devices=6, n_tokens=8, hops=60)


def main() -> int:
    key, n, remote = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    cfg = CoordinatorConfig(bind="0.0.0.0", key_file=key, allow_remote=remote, timeout_s=60,
                            join_timeout_s=30)
    with Coordinator(cfg) as coord:
        print("ENDPOINT", coord.endpoint, flush=True)
        try:
            out = coord.run("toy_program:make_program", SPEC, n)
        except SpinError as exc:
            print("ERROR", str(exc).replace("\n", " | "), flush=True)
            return 1
    print("RESULT", json.dumps(merged_devices(out.results)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
