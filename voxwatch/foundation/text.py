"""Text that is safe to store and show: no NUL, no other control character, no lone surrogate.

Postgres refuses a NUL in text and neither store can encode a lone surrogate (JSON can carry
both: "\\u0000", "\\ud800"), so one such character in a provider's transcript would make every
row of its clip unstorable. Text we are given to keep (a manifest's reference, an id) is refused
when it holds one (`control_chars`); text we only record (a provider's hypothesis or error
message) is made safe (`safe_text`), the same way wherever it comes from.
"""

from __future__ import annotations

import difflib
import re
from typing import Iterable

UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
"""Unicode's control characters (category Cc: C0, DEL, C1) and lone surrogates (Cs)."""
_SPACES = {"\t": " ", "\n": " ", "\r": " "}


def _escape(ch: str) -> str:
    return ch.encode("unicode_escape", "backslashreplace").decode("ascii")


def control_chars(text: str) -> list[str]:
    """The control characters and lone surrogates in text, escaped (for an error message)."""
    return sorted({_escape(m.group()) for m in UNSAFE.finditer(text)})


def safe_text(text: str) -> str:
    """Tabs and line breaks as spaces, other control characters dropped, lone surrogates as U+FFFD."""
    return UNSAFE.sub(lambda m: _SPACES.get(m.group(), "\ufffd" if m.group() >= "\ud800" else ""), text)


def one_line(text: str) -> str:
    """A message for one line of stderr: every control character (a newline in a file name) escaped."""
    return UNSAFE.sub(lambda m: _escape(m.group()), text)


def near_names(name: str, known: Iterable[str], n: int = 3) -> list[str]:
    """The known names a mistyped or partial one most likely meant: those it begins (a partial id
    like `pocketsphinx` for `pocketsphinx/en-us@5.1.1`), then difflib's closest, at most n."""
    known = sorted(set(known))
    prefixed = [k for k in known if k.startswith(name) and k != name]
    close = difflib.get_close_matches(name, known, n=n)
    return list(dict.fromkeys(prefixed + close))[:n]


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """'; did you mean X or Y?' for an error message ('' when nothing is near)."""
    near = near_names(name, known)
    return f"; did you mean {' or '.join(near)}?" if near else ""
