"""WER at the deadline through every reader (METHOD "WER at the deadline"): two streaming STT models
measured by the harness against the Deepgram emulator, one finalising before the end of speech and
one finalising late (its scripted schedule), stored as a vendor's rows are (the late one under a
second streaming model's id, so one board holds both), on SQLite and Postgres. The leaderboard API
and CSV, the STT board's page, the comparison pages that rank on WER at a deadline and the
definition in metrics/ must agree with the word errors counted by hand from the rows."""

from __future__ import annotations

import csv
import io
import re
import time
from dataclasses import replace

import pytest
from starlette.testclient import TestClient
from support.both_stores import seeded
from support.contract import KEY, measure, point, serve, starter_clean
from support.postgres import fresh_postgres
from support.processes import run_cli

from voxwatch.boards.leaderboard import build
from voxwatch.foundation.observation import Observation
from voxwatch.metrics.deadline_wer import DEADLINES_MS, errors_field, wer_field
from voxwatch.metrics.published import rounded
from voxwatch.providers.emulators.scenario import Scripted, STTScenario
from voxwatch.providers.emulators.server import Switch
from voxwatch.web.app import create_app

pytestmark = pytest.mark.realtime

EARLY_MODEL, LATE_MODEL = "deepgram/nova-3", "assemblyai/universal-streaming-english"
SCHEDULES = {EARLY_MODEL: (Scripted(-375, False, 2), Scripted(-125, True, None)),
             LATE_MODEL: (Scripted(-125, False, 1), Scripted(125, False, 3), Scripted(375, False, 5),
                          Scripted(750, True, 5), Scripted(875, True, None))}
"""Every result at least 125 ms from every deadline (test_deadline_wer.MARGIN_MS)."""
CLIPS, TICKS = ("u044", "u020", "u046"), 2


@pytest.fixture(scope="module")
def rows() -> list[Observation]:
    """Each model's clips at two ticks, measured through the harness, stored as a vendor's rows are."""
    ds, clips = starter_clean()
    switch, out, now = Switch(), [], time.time()
    with serve("deepgram", STTScenario("warm up", 0.0, 0.5, api_key=KEY, script=SCHEDULES[EARLY_MODEL]),
               switch=switch) as url:
        with pytest.MonkeyPatch.context() as mp:
            point(mp, "deepgram", url)
            measure(EARLY_MODEL, ds, clips["u039"])  # warm-up
            for model, script in SCHEDULES.items():
                for tick in range(TICKS):
                    for i, clip_id in enumerate(CLIPS):
                        c = clips[clip_id]
                        switch.use(STTScenario(transcript=c.text, speech_start_s=c.speech_start,
                                               speech_end_s=c.speech_end, api_key=KEY, script=script))
                        row = measure(EARLY_MODEL, ds, c)
                        assert row.status == "ok", row.reason
                        out.append(replace(row, emulator=False, run_id=f"tick-{tick}", model_id=model,
                                           vendor=model.split("/")[0], region="us-east",
                                           started_at=now - 3600 * (TICKS - tick) + i))
    return out


def by_hand(rows: list[Observation], model: str) -> dict:
    """The model's pooled WER of the final and at each deadline, counted from its rows."""
    mine = [r for r in rows if r.model_id == model]
    words = sum(r.ref_words for r in mine)
    return {"final": sum(r.substitutions + r.deletions + r.insertions for r in mine) / words,
            **{d: sum(getattr(r, errors_field(d)) for r in mine) / words for d in DEADLINES_MS}}


@pytest.fixture(scope="module")
def stores(rows, tmp_path_factory) -> dict[str, str]:
    """{"sqlite": url, "postgres": url}, each holding the rows."""
    with fresh_postgres() as url:
        run_cli("db", "upgrade", "--store", url)
        yield seeded(rows, url, tmp_path_factory.mktemp("stores"))


def test_the_late_finaliser_is_worse_at_the_early_deadlines_and_the_other_is_not(rows):
    late, early = by_hand(rows, LATE_MODEL), by_hand(rows, EARLY_MODEL)
    assert late[0] > late[250] > late[500] > late["final"] and late[1000] == late["final"] == 0
    assert early[0] == early[250] == early[1000] == early["final"] == 0
    metric_rows = {r.model_id: r for r in build(rows) if r.metric == "ttfs_ms"}
    for model, hand in ((LATE_MODEL, late), (EARLY_MODEL, early)):
        m = metric_rows[model]
        assert m.deadline_clips == len(CLIPS) * TICKS
        assert [getattr(m, wer_field(d)) for d in DEADLINES_MS] == pytest.approx([hand[d] for d in DEADLINES_MS])
    assert metric_rows[LATE_MODEL].wer_at_0ms_ci[0] > 0  # pooled WER's clustered interval, never crossing 0


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_every_reader_shows_the_wer_at_each_deadline_of_the_stored_rows(stores, kind, rows, cli):
    store_of = stores[kind]
    hand = {m: by_hand(rows, m) for m in SCHEDULES}
    code, wide, err = cli("leaderboard", "--board", "stt", "--wide", "--store", store_of)
    assert code == 0, err
    assert "WER at 0 / 250 / 500 / 1000 ms" in wide
    for model, figures in hand.items():
        cell = " / ".join(f"{100 * figures[d]:.1f}%" for d in DEADLINES_MS) + f" ({len(CLIPS) * TICKS} clips)"
        assert cell in next(line for line in wide.splitlines() if model in line), wide
    intervals = {r.model_id: r for r in build(rows) if r.metric == "ttfs_ms"}
    with TestClient(create_app(store_of)) as client:
        api = client.get("/api/v1/leaderboard", params={"board": "stt"}).json()["rows"]
        table = list(csv.DictReader(io.StringIO(client.get("/board/stt", params={"format": "csv"}).text)))
        page = client.get("/board/stt").text
        compared = {d: client.get(f"/api/v1/compare/stt-stream-at-{d}ms").json() for d in DEADLINES_MS}
        compare_csv = list(csv.DictReader(io.StringIO(client.get("/api/v1/compare/stt-stream-at-0ms",
                                                                 params={"format": "csv"}).text)))
        compare_page = client.get("/compare/stt-stream-at-250ms")
    for model, figures in hand.items():
        mine = [r for r in api if r["model_id"] == model]
        assert mine
        for d in DEADLINES_MS:
            name = wer_field(d)
            ci = getattr(intervals[model], f"{name}_ci")
            assert all(r[name] == rounded(figures[d], "fraction") and r["deadline_clips"] == len(CLIPS) * TICKS
                       and r[f"{name}_ci"] == (None if ci is None else rounded(list(ci), "fraction")) for r in mine)
            assert all(float(r[name]) == pytest.approx(figures[d]) for r in table if r["model_id"] == model)
            everything = re.search(rf'<tbody class="series" data-model="{re.escape(model)}".*?</tbody>', page,
                                   re.S).group(0)
            assert f'data-field="{name}" data-value="{getattr(intervals[model], name)}">{d} ms:' in everything
            line = next(x for x in compared[d]["rows"] if x["model_id"] == model)
            assert (line["accuracy"], line["accuracy_n"]) == (rounded(figures[d], "fraction"), len(CLIPS) * TICKS)
        assert float(next(x for x in compare_csv if x["model_id"] == model)["accuracy"]) == \
            rounded(figures[0], "fraction")
    for d in (0, 250):  # the late finaliser ranks below the other on what an agent has then
        lines = {x["model_id"]: x["accuracy"] for x in compared[d]["rows"]}
        assert lines[LATE_MODEL] > lines[EARLY_MODEL]
        assert compared[d]["accuracy"] == {"figure": wer_field(d), "title": f"WER {d} ms after the end of speech",
                                           "unit": "fraction", "lower_is_better": True}
    assert compare_page.status_code == 200 and "WER 250 ms after the end of speech" in compare_page.text
    assert all(m in compare_page.text for m in SCHEDULES)
