"""The one reading of a store URL: which store it names, the SQLite file or the Postgres conninfo,
how messages show it, and every spelling of its password.

Every place that needs to know what a store URL means (the config's check, `open_store`, the web
app, the alerts, the beat schedule, the one Postgres connection path) asks here, so a URL is never
read two ways. A Postgres URL is read by libpq itself (psycopg's `conninfo_to_dict`), once; its
password must be percent-encoded where it holds a character that ends the user part ('@', '/',
'?', '#'), because libpq would otherwise take the rest of it for a host, port or database and
quote that piece back in its errors, where no scrubber could recognise it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from voxwatch.foundation.redaction import redact_url, scrub, url_password, url_secrets


class StoreError(RuntimeError):
    """The store cannot be reached or written; the message says which and never holds a secret."""


SQLITE, POSTGRES = "sqlite", "postgres"
_PREFIXES = {"sqlite:///": SQLITE, "postgresql://": POSTGRES, "postgres://": POSTGRES}
EXPECTED = "sqlite:///relative/path, sqlite:////absolute/path or postgresql://user@host:port/database"
_ENDS_USERINFO = "@/?#"


def store_kind(url: str) -> str | None:
    """"sqlite", "postgres", or None for a URL no store speaks (no parsing beyond the scheme)."""
    return next((kind for prefix, kind in _PREFIXES.items() if url.startswith(prefix)), None)


@dataclass(frozen=True)
class StoreURL:
    """A parsed store URL. Its repr and `shown` never hold the password."""

    kind: str  # "sqlite" | "postgres"
    shown: str  # the URL with its password as ***: what every message names
    path: Path | None = None  # sqlite: the database file
    conninfo: dict[str, str] = field(default_factory=dict, repr=False)  # postgres: libpq's own reading
    secrets: tuple[str, ...] = field(default=(), repr=False)  # every spelling of its password

    def scrub(self, text: str) -> str:
        """`text` (a library's message about this store) with every spelling of the password cut out."""
        return scrub(text, secrets=self.secrets)


def parse_store_url(url: str) -> StoreURL:
    """The store a URL names; StoreError (naming it without its password) when it names none."""
    kind, shown = store_kind(url), redact_url(url)
    if kind == SQLITE:
        return StoreURL(SQLITE, shown, path=Path(url[len("sqlite:///"):]))
    if kind is None:
        raise StoreError(f"unsupported store URL scheme in {url.split(':', 1)[0]!r}; use {EXPECTED}")
    password = url_password(url)
    if password and any(c in password for c in _ENDS_USERINFO):
        raise StoreError(f"cannot read the store URL {shown}: percent-encode the password's "
                         "'@', '/', '?' and '#' (as %40, %2F, %3F, %23)")
    from psycopg import Error
    from psycopg.conninfo import conninfo_to_dict

    secrets = url_secrets(url)
    try:
        conninfo = {k: str(v) for k, v in conninfo_to_dict(url).items()}
    except Error as exc:
        raise StoreError(f"cannot read the store URL {shown}: {scrub(str(exc).strip(), secrets=secrets)}") from None
    return StoreURL(POSTGRES, shown, conninfo=conninfo, secrets=(*secrets, conninfo.get("password", "")))
