"""CurveZMQ keys for runs that listen beyond loopback.

One shared keypair per run: the coordinator and every worker hold the same secret key file, use it
both as CURVE server and client key, and every bound socket admits only clients presenting that
public key (checked by a ZAP handler). Whoever holds the key file can join the run, so treat it
like a password: create it per cluster/run, copy it to the worker hosts over a trusted channel
(scp), and keep it mode 0600.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import zmq
import zmq.auth
from zmq.auth.thread import ThreadAuthenticator

from spin.errors import ConfigError

KEY_NAME = "spin"


@dataclass(frozen=True)
class KeyPair:
    public: bytes  # z85-encoded, 40 bytes
    secret: bytes  # z85-encoded, 40 bytes
    path: str  # the secret key file it came from (passed on to local workers)


def key_files(directory: str | os.PathLike) -> tuple[Path, Path]:
    """The public and the secret key file generate_keys writes into ``directory``."""
    d = Path(directory)
    return d / f"{KEY_NAME}.key", d / f"{KEY_NAME}.key_secret"


def existing_keys(directory: str | os.PathLike) -> list[Path]:
    """The key files already in ``directory`` (a dangling link too: writing would follow it)."""
    return [p for p in key_files(directory) if os.path.lexists(p)]


def generate_keys(directory: str | os.PathLike, *, force: bool = False) -> Path:
    """Create the run's keypair in ``directory``; returns the secret key file to pass as --key-file.
    An existing pair is kept unless ``force``: a new one locks out every worker holding the old."""
    existing = existing_keys(directory)
    if existing and not force:
        raise ConfigError(f"{' and '.join(map(str, existing))} already "
                          f"exist{'s' if len(existing) == 1 else ''}: a new key pair would lock "
                          f"out the workers holding it; pass force=True to replace it")
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    for old in existing:   # new files, not writes through whatever the old names point to
        old.unlink()
    umask = os.umask(0o077)     # the secret is never readable by others, not even until chmod
    try:
        public_file, secret_file = zmq.auth.create_certificates(str(d), KEY_NAME)
    finally:
        os.umask(umask)
    os.chmod(secret_file, 0o600)
    os.chmod(public_file, 0o644)
    return Path(secret_file)


def load_keys(key_file: str | os.PathLike) -> KeyPair:
    """Load a secret key file written by generate_keys (ConfigError if missing or public-only)."""
    path = Path(key_file)
    if not path.is_file():
        raise ConfigError(f"key file {str(path)!r} does not exist (create one with spin.parallel.auth.generate_keys)")
    try:
        public, secret = zmq.auth.load_certificate(str(path))
    except (ValueError, OSError) as exc:
        raise ConfigError(f"key file {str(path)!r} is not a CurveZMQ certificate: {exc}") from exc
    if not secret:
        raise ConfigError(f"key file {str(path)!r} holds no secret key; pass the '.key_secret' file")
    return KeyPair(public=public, secret=secret, path=str(path.resolve()))


class _OnlyKey:
    """ZAP credentials provider admitting exactly one client public key."""

    def __init__(self, public: bytes) -> None:
        self._public = public  # z85, as pyzmq hands it to the callback

    def callback(self, domain: str, key: bytes) -> bool:
        return key == self._public


def start_authenticator(ctx: zmq.Context, keys: KeyPair) -> ThreadAuthenticator:
    """ZAP handler for this context's CURVE servers; stop() it before ctx.term()."""
    auth = ThreadAuthenticator(ctx)
    auth.start()
    auth.configure_curve_callback(domain="*", credentials_provider=_OnlyKey(keys.public))
    return auth


def make_server(sock: zmq.Socket, keys: KeyPair | None) -> None:
    if keys is not None:
        sock.curve_secretkey = keys.secret
        sock.curve_publickey = keys.public
        sock.curve_server = True


def make_client(sock: zmq.Socket, keys: KeyPair | None) -> None:
    if keys is not None:
        sock.curve_secretkey = keys.secret
        sock.curve_publickey = keys.public
        sock.curve_serverkey = keys.public
