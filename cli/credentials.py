"""The CLI's sign-on, kept between runs: for each control plane (its URL), the issuer's refresh token and
the last access token, in ``<config dir>/credentials.json``: the file 0600 in a 0700 folder, written
whole (a new file renamed over the old), and refused when others may read it, as ssh refuses a key."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

from .errors import AuthError

FILE_NAME = "credentials.json"


@dataclass
class SignOn:
    issuer: str
    client_id: str
    token_endpoint: str
    refresh_token: str
    access_token: str = ""
    expires_at: float = 0.0
    scope: str = ""
    revocation_endpoint: str = ""


def config_dir(env: Mapping[str, str]) -> Path:
    """SRCNET_CONFIG_DIR, else $XDG_CONFIG_HOME/srcnet, else ~/.config/srcnet."""
    if env.get("SRCNET_CONFIG_DIR"):
        return Path(env["SRCNET_CONFIG_DIR"])
    base = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME") or Path.home()) / ".config")
    return Path(base) / "srcnet"


def _read(folder: Path) -> dict[str, dict[str, object]]:
    path = folder / FILE_NAME
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return {}
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise AuthError(
            f"{path} may be read by others: it holds your sign-on; chmod 600 it, or sign on again"
        )
    try:
        kept = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise AuthError(f"{path} cannot be read ({exc}): remove it and sign on again") from exc
    return kept if isinstance(kept, dict) else {}


def load(folder: Path, url: str) -> SignOn | None:
    entry = _read(folder).get(url)
    if not isinstance(entry, dict):
        return None
    try:
        return SignOn(**entry)  # type: ignore[arg-type]
    except TypeError:
        return None


def save(folder: Path, url: str, sign_on: SignOn) -> Path:
    kept = _read(folder)
    kept[url] = asdict(sign_on)
    return _write(folder, kept)


def forget(folder: Path, url: str) -> bool:
    kept = _read(folder)
    if kept.pop(url, None) is None:
        return False
    _write(folder, kept)
    return True


def _write(folder: Path, kept: dict[str, dict[str, object]]) -> Path:
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(folder, 0o700)
    path = folder / FILE_NAME
    partial = folder / f".{FILE_NAME}.{os.getpid()}"
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as out:
        json.dump(kept, out, indent=1, sort_keys=True)
    os.replace(partial, path)
    return path
