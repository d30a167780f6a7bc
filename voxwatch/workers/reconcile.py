"""Finishing runs from what the store holds, whatever Redis lost or the store refused.

A distributed run is finished by the worker that counts its last row, and that count lives in
Redis while the record lives in the store, so either can fail it: a Redis restart loses the count
of a task in flight, and a store that is down refuses the final record (its rows are spooled).
The reconciler needs neither. The run's record holds its planned total; the reconciler counts the
run's stored rows and

- finishes a `running` run as soon as every planned row is stored;
- finishes one still short of rows at its deadline, `[run] reconcile_after_s` after its start,
  from the rows that are there (`partial`, or `failed` with no ok row), and leaves it alone before;
- finishes again a run that has more rows stored than its record counts (stored after it was
  finished: a spool drained late, a dead worker's task redelivered, `voxwatch ingest`).

The status is `run_status`, the rule every finisher applies, and the counts are the store's.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Iterable

from voxwatch.foundation.observation import RunRecord, run_status
from voxwatch.store import Store

LOOKBACK_S = 7 * 86400
"""Finished runs started this long ago or less are recounted (rows arriving later are rare and
early); a run still `running` is looked at whatever its age."""
MARK = "reconciled:"


def settle(run: RunRecord, stored: tuple[int, int], now: float, after_s: float) -> RunRecord | None:
    """The record the run's stored (rows, rows not ok) make it at `now`, or None to leave it as it is."""
    rows, failed = stored
    complete = run.planned is None or rows >= run.planned  # an unknown total: judged on its rows alone
    if run.status == "running":
        if run.planned is not None and complete:
            why = f"{MARK} every planned row is stored ({rows})"
        elif now >= run.started_at + after_s:
            of = f"of {run.planned} planned " if run.planned is not None else ""
            why = f"{MARK} {rows} rows {of}stored by its deadline ({after_s:g} s after its start)"
        else:
            return None
    elif rows > run.rows:
        why = f"{MARK} {rows - run.rows} rows stored after it was finished"
    else:
        return None
    kept = [part for part in (run.note or "").split("; ") if part and not part.startswith(MARK)]
    return replace(run, status=run_status(rows, failed, complete), finished_at=now, rows=rows, failed_rows=failed,
                   note="; ".join([*kept, why]))


def reconcile(store: Store, after_s: float, now: float | None = None, run_ids: Iterable[str] | None = None,
              lookback_s: float = LOOKBACK_S) -> list[RunRecord]:
    """Settle the recent and running runs (or only `run_ids`) and write each record that changed; returns those."""
    now = time.time() if now is None else now
    if run_ids is None:
        runs = store.runs_since(now - lookback_s)
    else:
        runs = [r for r in (store.run(i) for i in run_ids) if r is not None]
    counts = store.run_counts([r.run_id for r in runs]) if runs else {}
    settled = []
    for run in runs:
        final = settle(run, counts.get(run.run_id, (0, 0)), now, after_s)
        if final is not None:
            store.finish_run(final)
            settled.append(final)
    return settled


def finish_counted(store: Store, counted: RunRecord, now: float | None = None) -> RunRecord | None:
    """The worker's finisher, once Redis has counted every row of the run: the record from the rows
    the store holds, written when every planned row is there. Otherwise (some rows are spooled) it
    makes sure the store has the run's record with its planned total, and returns None: the drain of
    the spool or the reconciler finishes it."""
    now = time.time() if now is None else now
    rows, failed = store.run_counts([counted.run_id]).get(counted.run_id, (0, 0))
    if counted.planned is not None and rows < counted.planned:
        if store.run(counted.run_id) is None:  # its record was refused when it started
            store.start_run(replace(counted, status="running", finished_at=None, rows=0, failed_rows=0))
        return None
    final = replace(counted, status=run_status(rows, failed), finished_at=now, rows=rows, failed_rows=failed)
    store.finish_run(final)
    return final

