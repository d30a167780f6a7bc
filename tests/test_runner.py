"""The tick's envelope: interrupted runs keep what they completed; a store that is down loses nothing."""

from pathlib import Path

import pytest

from support.processes import run_cli
from voxwatch.config import load
from voxwatch.datasets.catalog import Catalog, bundled_root
from voxwatch.providers.registry import Registry
from voxwatch.foundation.store_url import StoreError
from voxwatch.store import open_store
from voxwatch.harness.tick import plan_tick, run_tick

ESPEAK = "espeak-ng/en-us@1.52.0"


class RefusingStore:
    """A real SQLite store whose inserts fail while `down` is true, as a store that went away."""

    def __init__(self, url: str) -> None:
        self.inner = open_store(url)
        self.down = True
        self.refused = 0

    def add(self, rows):
        if self.down:
            self.refused += 1
            raise StoreError("cannot write observations: database is locked")
        return self.inner.add(rows)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def _setup(tmp_path: Path, n: int = 3):
    config = load(environ={"VOXWATCH_STORE_SPOOL_DIR": str(tmp_path / "spool")})
    registry = Registry.default()
    plan = plan_tick(config, registry, Catalog([bundled_root()]), models=[ESPEAK], datasets=["tts-prompts"],
                     sample_size=n, seed=4)
    return config, registry, plan


def test_rows_refused_while_the_store_is_down_are_written_when_it_returns(tmp_path: Path):
    config, registry, plan = _setup(tmp_path)
    store = RefusingStore(f"sqlite:///{tmp_path}/s.sqlite")

    def recover(row):
        store.down = row.clip_id == plan.tasks[0].item.id  # refuses the first two writes, then comes back

    result = run_tick(config, store, registry, plan, progress=False, on_row=recover)
    assert store.refused == 2 and result.spooled is None
    assert sorted(r.clip_id for r in store.inner.observations()) == sorted(t.item.id for t in plan.tasks)


@pytest.mark.realtime
def test_rows_the_store_never_takes_are_spooled_and_ingested_later(tmp_path: Path):
    config, registry, plan = _setup(tmp_path)
    url = f"sqlite:///{tmp_path}/s.sqlite"
    store = RefusingStore(url)
    result = run_tick(config, store, registry, plan, progress=False)
    assert result.spooled is not None and result.spooled.parent == tmp_path / "spool"
    assert list(store.inner.observations()) == []
    assert "spooled to" in store.inner.runs()[0].note
    out = run_cli("ingest", str(result.spooled), "--store", url).stdout
    assert "read 3 observations" in out and "3 were new" in out
    assert "0 were new" in run_cli("ingest", str(result.spooled), "--store", url).stdout
    back = list(open_store(url).observations())
    assert sorted(r.clip_id for r in back) == sorted(r.clip_id for r in result.rows)
    assert all(r.ttfa_ms is not None for r in back)


def test_an_interrupted_tick_is_partial_and_keeps_its_rows(tmp_path: Path):
    config, registry, plan = _setup(tmp_path)
    store = open_store(f"sqlite:///{tmp_path}/s.sqlite")

    def stop_after_first(row):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_tick(config, store, registry, plan, progress=False, on_row=stop_after_first)
    run = store.runs()[0]
    assert run.status == "partial" and run.rows == 1 and "interrupted" in run.note and run.finished_at
    assert len(list(store.observations())) == 1
