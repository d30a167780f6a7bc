"""A run the store holds rows of but no record for: its record was refused when the run started,
and the one that would have finished it too (the store was down, and Redis lost the run's count).
The reconciler (voxwatch.workers.reconcile) finishes it from its rows like any other run."""

from __future__ import annotations

from voxwatch.foundation.observation import RunRecord

UNRECORDED = "no run record was stored; rebuilt from its rows (planned total unknown)"


def unrecorded_run(run_id: str, first_row_at: float, region: str, seed: int) -> RunRecord:
    """The run as its rows describe it: started at its first row, still `running`, planned unknown."""
    return RunRecord(run_id=run_id, started_at=first_row_at, region=region, seed=seed, note=UNRECORDED)
