"""The import layering of DESIGN.md section 3, as the contracts in ``.importlinter`` state it:
one direction from the control plane down to the wire formats, spin reaching the device
packages and ready handlers only at listed run-time entry points, and no import cycles inside
any package. A broken contract fails with import-linter's report (which import, where)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ABOVE_SPIN = ("nic_emulator", "switch_emulator", "bump_emulator", "handlers")


def _env() -> dict[str, str]:
    """This checkout first on the path, whatever spin is installed elsewhere."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])}


def test_import_contracts_are_kept():
    """Needs import-linter (``pip install 'spin-emulator[test]'``); without it the test fails
    saying so rather than skipping, since it is what keeps the layering."""
    proc = subprocess.run(
        [sys.executable, "-c", "import sys; from importlinter.cli import lint_imports; "
         "sys.exit(lint_imports(config_filename='.importlinter', no_cache=True, no_logo=True))"],
        cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"import contracts broken:\n{proc.stdout}\n{proc.stderr}"


def test_importing_spin_loads_no_device_package_or_handler():
    """Every spin module imports without nic_emulator, switch_emulator or handlers (they are
    imported when a scenario is built or run), except the transports' and schemes' declaration
    modules (``spin.transports``, ``spin.scheme_parts``: the engine's tables are laid out from
    them) and their packages. The engine loop template is source text that engine.codegen joins with the
    devices' receive paths; importing it is not how it is used."""
    code = f"""
import importlib, pkgutil, sys
import spin
from spin.scheme_parts import declaration_paths
from spin.transports import SHARED_PARTS, TRANSPORTS
skip = {{"spin.__main__", "spin.engine.loop_template"}}
names = sorted(m.name for m in pkgutil.walk_packages(spin.__path__, "spin.")
               if m.name not in skip)
for name in names:
    importlib.import_module(name)
declared = set(SHARED_PARTS) | {{p for t in TRANSPORTS for p in t.declares}}
declared |= set(declaration_paths()) | {{"bump_emulator.columns"}}
declared |= {{p.rsplit(".", i)[0] for p in declared for i in range(1, p.count(".") + 1)}}
loaded = sorted(m for m in sys.modules if m.split(".")[0] in {ABOVE_SPIN!r}
                and m not in declared)
print(len(names), "modules;", "loaded:", ", ".join(loaded) or "none")
sys.exit(1 if loaded else 0)
"""
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=_env(),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_every_module_of_spin_sits_in_a_layer():
    """Each top-level module and subpackage of spin is named in the layers contract, so a new
    one is placed on purpose (where it may import from and be imported by), not left outside
    every rule."""
    import configparser
    parser = configparser.ConfigParser()
    parser.read(ROOT / ".importlinter")
    lines = parser["importlinter:contract:layers"]["layers"].splitlines()
    named = {name.strip() for line in lines if not line.strip().startswith("#")
             for name in line.replace(":", "|").split("|") if name.strip()}
    spin_dir = ROOT / "spin"
    own = {f"spin.{p.stem}" for p in spin_dir.glob("*.py") if p.stem != "__init__"}
    own |= {f"spin.{p.parent.name}" for p in spin_dir.glob("*/__init__.py")}
    assert sorted(own - named) == []
