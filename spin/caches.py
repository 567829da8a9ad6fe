"""Where spin keeps what it caches, and how a damaged cache heals.

Everything lives under one root, ``$SPIN_CACHE_DIR`` (default ``$XDG_CACHE_HOME/spin`` or
``~/.cache/spin``), so deleting that folder resets every cache and a test can isolate itself
with a temporary one:

* ``engines/``: the generated engine module (``spin.engine.codegen``);
* ``handlers/``: the generated entry of each handler (``spin.engine.handler_build``);
* ``runtime/``: Numba's runtime module, compiled once per Numba version and CPU
  (``spin.cached_runtime``);
* ``numba/<digest>/``: Numba's machine-code cache of spin's own modules, of the generated
  engines and of any ``cache=True`` function of the process (``NUMBA_CACHE_DIR`` is pointed
  there when ``spin`` is imported, unless the user set it; without this, Numba writes next to
  the sources). ``<digest>`` hashes every source of spin that holds compiled code (``COMPILED_SOURCES``),
  so editing one starts a fresh cache instead of mixing old and new machine code across
  modules.

A cache file that cannot be read (truncated by a full disk, a killed process, bit rot) would make
every later run fail inside Numba's loader until deleted by hand; ``heal_numba_cache`` makes
Numba treat it as a miss instead: the file is removed, a warning names it, and the function is
compiled and cached anew.

Loading cached machine code needs only Numba's runtime (``start_numba_runtime``), not its
compiler: Numba's own loader first refreshes its whole target context, importing every lowering
registry (0.13 s per process, more where scipy is installed), which a run whose engine and
handlers are all cached never uses. ``heal_numba_cache`` therefore loads with the
runtime alone; a function that does compile still refreshes the context first, as Numba's
compiler always does. Numba also proves a cache folder writable, by creating and deleting a file
in it, for each of the 300-odd cached functions it sets up; once per folder and process is
enough.
"""
from __future__ import annotations

import contextlib
import functools
import glob
import os
import sys
import warnings
from pathlib import Path

from .errors import ConfigError, SpinError

NUMBA_SUBDIR = "numba"
RUNTIME_SUBDIR = "runtime"   # Numba's runtime module, compiled once (spin.cached_runtime)
_SET_BY_SPIN = "SPIN_NUMBA_CACHE_DIR_SET"  # marks a NUMBA_CACHE_DIR spin chose, not the user


def cache_root() -> Path:
    """The root of every spin cache (not created here)."""
    base = os.environ.get("SPIN_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "spin")
    return Path(base)


def check_cache_root() -> None:
    """Refuse, with one line naming it, a cache root that cannot hold folders: a file (or a
    path through a file), or a folder spin may not write to."""
    root = cache_root()
    existing = next((p for p in (root, *root.parents) if p.exists()), None)
    if existing is not None and not existing.is_dir():
        raise ConfigError(f"cache folder {str(root)!r} (SPIN_CACHE_DIR, default ~/.cache/spin): "
                          f"{str(existing)!r} is a file, not a folder; point SPIN_CACHE_DIR "
                          f"elsewhere or remove the file")
    if existing is not None and not os.access(existing, os.W_OK | os.X_OK):
        raise ConfigError(f"cache folder {str(root)!r} (SPIN_CACHE_DIR, default ~/.cache/spin): "
                          f"{str(existing)!r} is not writable")
    try:    # root passes os.access on /proc and /sys, where no folder can be made
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cache folder {str(root)!r} (SPIN_CACHE_DIR, default ~/.cache/spin): "
                          f"cannot be made: {exc.strerror or exc}; point SPIN_CACHE_DIR "
                          f"elsewhere") from None


# Every file or folder, relative to the project root, whose code Numba compiles and caches or
# whose constants compiled code reads: derived from the registries (``spin.compiled_sources``)
# and set once, when ``spin`` is imported (``configure_numba_cache_dir``).
COMPILED_SOURCES: tuple[str, ...] = ()


def compiled_source_files() -> list[Path]:
    """The files of ``COMPILED_SOURCES``, each once, in a stable order."""
    root = Path(__file__).resolve().parents[1]
    files: list[Path] = []
    for rel in COMPILED_SOURCES:
        p = root / rel
        files += sorted(p.rglob("*.py")) if p.is_dir() else [p]
    return list(dict.fromkeys(files))


# Entry-point group of NIC transports from outside spin (spin.transports reads the entries).
TRANSPORT_ENTRY_POINTS = "spin.transports"


@functools.lru_cache(maxsize=1)
def _may_publish(group: str) -> bool:
    """False only when no distribution metadata folder on ``sys.path`` names ``group`` in its
    ``entry_points.txt``: where ``importlib.metadata`` would look, read without importing it.
    A path entry that is not a folder (a zip) or a folder it cannot read answers True."""
    header = f"[{group}]"
    for entry in sys.path:
        try:
            with os.scandir(entry or ".") as items:
                names = [i.name for i in items if i.name.endswith((".dist-info", ".egg-info"))]
        except NotADirectoryError:
            return True
        except OSError:
            continue
        for name in names:
            try:
                text = Path(entry or ".", name, "entry_points.txt").read_text(errors="replace")
            except FileNotFoundError:
                continue
            except OSError:
                return True
            if header in text:
                return True
    return False


def transport_entry_points() -> tuple:
    """Entry points of group ``spin.transports`` of installed packages, by name, read once per
    process (spin.transports loads them). Every start reads them, so a start with no package
    naming the group skips ``importlib.metadata`` (a fifth of a cached small run's own imports)."""
    if not _may_publish(TRANSPORT_ENTRY_POINTS):
        return ()
    import importlib.metadata
    try:
        points = importlib.metadata.entry_points(group=TRANSPORT_ENTRY_POINTS)
    except Exception:  # noqa: BLE001 - broken metadata of some package: nothing published
        return ()
    return tuple(sorted(points, key=lambda ep: ep.name))


def sources_digest(root: Path) -> bytes:
    """Digest of the compiled sources (``COMPILED_SOURCES``, named relative to ``root``). A
    transport from outside spin is not part of it: it is compiled apart
    (``spin.assembly.transport_entries``), keyed by its own sources."""
    import hashlib
    h = hashlib.sha256()
    for f in compiled_source_files():
        h.update(str(f.relative_to(root)).encode())
        h.update(f.read_bytes())
    return h.digest()


def project_source_digest() -> str:
    """Digest of every source file of spin that holds compiled code. Numba caches a function
    per file, keyed on that file alone, but compiles its callees into it: an edit to
    ``ports.py`` would leave ``host.py``'s cached code calling the old ``ports`` functions.
    Keying the whole Numba cache on these sources makes such stale machine code impossible,
    while edits to the rest of spin (CLI, results, docs) keep the compiled engine."""
    return sources_digest(Path(__file__).resolve().parents[1]).hex()[:16]


def configure_numba_cache_dir(sources: tuple[str, ...]) -> None:
    """Record ``sources`` as ``COMPILED_SOURCES`` and point Numba's cache under the spin cache
    root, before any spin function is decorated (Numba picks a function's cache location when
    it is decorated). A ``NUMBA_CACHE_DIR`` set by the user wins; one set by a parent spin
    process (inherited through the environment) is recomputed, so a child given another
    ``SPIN_CACHE_DIR`` stays isolated."""
    global COMPILED_SOURCES
    COMPILED_SOURCES = tuple(sources)
    current = os.environ.get("NUMBA_CACHE_DIR")
    if current and current != os.environ.get(_SET_BY_SPIN):
        return
    path = str(cache_root() / NUMBA_SUBDIR / project_source_digest())
    os.environ["NUMBA_CACHE_DIR"] = os.environ[_SET_BY_SPIN] = path
    config = sys.modules.get("numba.core.config")
    if config is not None:  # numba was imported first: its config already read the environment
        config.CACHE_DIR = path


def _remove_entry(cache_file) -> list[str]:
    """Delete the index and data files of one cached function; return the removed paths."""
    index = cache_file._index_path
    base = index.removesuffix(".nbi")
    removed = []
    for path in [index] + glob.glob(glob.escape(base) + ".*.nbc"):
        try:
            os.remove(path)
            removed.append(path)
        except FileNotFoundError:
            pass
    return removed


def start_numba_runtime(target_context=None):
    """Numba's CPU target context with its runtime (NRT) started: the symbols cached machine
    code links against. This is all loading from the cache needs; the compiler's registries
    are loaded when something compiles. Idempotent; returns the context."""
    from numba.core.runtime import rtsys
    if target_context is None:
        from numba.core.registry import cpu_target
        target_context = cpu_target.target_context
    rtsys.initialize(target_context)
    return target_context


def _load_without_refresh(cache, sig, target_context, numba_load):
    """``numba_load`` (Numba's ``Cache.load_overload``) minus its refresh of the whole target
    context: the runtime is started, then the entry is read as Numba reads it (its index says
    whether the entry is there and still matches its source file). A Numba whose cache lacks
    the internals used here loads its own way."""
    load = getattr(cache, "_load_overload", None)
    guard = getattr(cache, "_guard_against_spurious_io_errors", None)
    if load is None or guard is None:
        return numba_load(cache, sig, target_context)
    start_numba_runtime(target_context)
    with guard():
        return load(sig, target_context)
    return None   # the guard swallowed a spurious I/O error: a miss, as in Numba


def _load_entry(cache, sig, target_context, numba_load):
    """Load without the refresh; should that fail, once more as Numba loads (compiler
    refreshed), so only an entry that neither way can read counts as damaged."""
    try:
        return _load_without_refresh(cache, sig, target_context, numba_load)
    except (KeyboardInterrupt, SystemExit, MemoryError):
        raise
    except Exception:  # noqa: BLE001  (the second read decides)
        return numba_load(cache, sig, target_context)


_WRITABLE_DIRS: set[str] = set()   # cache folders proven writable in this process


def _ensure_cache_path_once(numba_ensure):
    """Numba's ``ensure_cache_path`` (create the folder, prove it writable), done once per
    folder: again only if the folder has gone since."""
    def ensure_cache_path(self):
        path = self.get_cache_path()
        if path in _WRITABLE_DIRS and os.path.isdir(path):
            return
        numba_ensure(self)
        _WRITABLE_DIRS.add(path)

    ensure_cache_path.__spin_once__ = True
    return ensure_cache_path


def heal_numba_cache() -> None:
    """Make Numba treat an unreadable cache entry as a miss (removed, warned about, rebuilt),
    load entries without refreshing its compiler and check each cache folder once (module
    docstring), and read a loaded entry's symbols from its object code
    (``spin.cached_machine_code``). Idempotent.

    Numba's loader only forgives missing files; any other failure (``UnpicklingError``,
    ``EOFError``, a data file that does not rebuild) propagates to the caller."""
    from numba.core import caching
    if getattr(caching.Cache.load_overload, "__spin_heals__", False):
        return
    from .cached_machine_code import load_without_bitcode
    from .cached_runtime import load_runtime_from_cache
    load_without_bitcode()
    load_runtime_from_cache(lambda: cache_root() / RUNTIME_SUBDIR)
    locator = caching._CacheLocator
    if not getattr(locator.ensure_cache_path, "__spin_once__", False):
        locator.ensure_cache_path = _ensure_cache_path_once(locator.ensure_cache_path)
    original = caching.Cache.load_overload

    def load_overload(self, sig, target_context):
        try:
            return _load_entry(self, sig, target_context, original)
        except (KeyboardInterrupt, SystemExit, MemoryError):
            raise
        except Exception as exc:  # noqa: BLE001  (any unreadable entry is a miss)
            removed = _remove_entry(self._cache_file)
            warnings.warn(f"spin: unreadable Numba cache entry for {self._name} "
                          f"({type(exc).__name__}: {exc}); removed {', '.join(removed) or '?'} "
                          f"and compiling it again", RuntimeWarning, stacklevel=2)
            return None

    load_overload.__spin_heals__ = True
    caching.Cache.load_overload = load_overload


LOCK_WAIT_S = 1800.0   # longest wait for another process's compile (a cold one is minutes)


@contextlib.contextmanager
def compile_lock(path: str | Path, what: str, quiet: bool = False):
    """Hold the lock processes take to compile ``what`` once (the others wait, then load the
    cache). A wait over a second says whom it waits for (unless ``quiet``); one longer than
    ``SPIN_LOCK_WAIT_S`` (default ``LOCK_WAIT_S``) is an error naming the lock file, which a
    killed process on a network file system may leave behind."""
    from filelock import FileLock, Timeout
    lock = FileLock(str(path))
    try:
        lock.acquire(timeout=1.0)
    except Timeout:
        limit = float(os.environ.get("SPIN_LOCK_WAIT_S", LOCK_WAIT_S))
        if not quiet:
            print(f"spin: waiting for another process compiling {what} (lock {path}) ...",
                  file=sys.stderr, flush=True)
        try:
            lock.acquire(timeout=limit)
        except Timeout:
            raise SpinError(f"waited {limit:.0f} s for {path}, the lock of another process "
                            f"compiling {what}; if no spin process is running, remove that "
                            f"file (SPIN_LOCK_WAIT_S sets the wait)") from None
    try:
        yield
    finally:
        lock.release()

