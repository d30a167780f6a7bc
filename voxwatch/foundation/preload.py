"""Import scipy up front in the processes that serve or measure.

scipy.stats and scipy.signal take 0.5-5 s to import on a busy 2-core machine. The modules that use
them import them where first needed, so a one-shot CLI command that never touches them starts in
well under a second. A long-running process must not pay that import inside its first timed
window or its first page (a first request that outlasts its client's timeout): the web app, a
worker process and a monitoring tick call this before they start.
"""

from __future__ import annotations


def numerics() -> None:
    import scipy.signal  # noqa: F401  datasets.audio.resample
    import scipy.stats  # noqa: F401  metrics: intervals and the alert tests
