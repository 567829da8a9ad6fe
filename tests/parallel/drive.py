"""Runs a toy fabric in its own process, for tests that signal or kill the coordinator.

Usage: python drive.py N_WORKERS ALLOW_REMOTE PID_DIR SLOW_S HOPS [KEY_FILE]
Prints "ENDPOINT <ep>" first, then "DONE <rounds>", "WORKERERROR <msg>" or "INTERRUPTED".
"""

import sys

import conftest  # noqa: F401  (import paths)
from toy_program import ToySpec

from spin.errors import WorkerError
from spin.parallel import Coordinator, CoordinatorConfig


def main() -> int:
    n, remote, pid_dir, slow, hops = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], float(sys.argv[4]), int(sys.argv[5])
    spec = ToySpec(hops=hops, slow_s=slow, pid_dir=pid_dir)
    key = sys.argv[6] if len(sys.argv) > 6 else None  # remote slots need the run's key
    with Coordinator(CoordinatorConfig(allow_remote=remote, timeout_s=120, key_file=key)) as coord:
        print("ENDPOINT", coord.endpoint, flush=True)
        try:
            out = coord.run("toy_program:make_program", spec, n)
        except KeyboardInterrupt:
            print("INTERRUPTED", flush=True)
            return 130
        except WorkerError as exc:
            print("WORKERERROR", str(exc).splitlines()[0], flush=True)
            return 1
    print("DONE", out.rounds, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
