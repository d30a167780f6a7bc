"""The OpenAPI 3.1 document of the read-only JSON API (/api/v1/openapi.json).

Row schemas are derived from the dataclasses the API serializes (leaderboard.MetricRow,
alerts.store.Alert, the conversation rows and board statistics), so a new field cannot be served
without being described.
"""

from __future__ import annotations

from dataclasses import fields

from voxwatch import __version__
from voxwatch.boards.use_cases import COMPARE_BOARDS
from voxwatch.conversations.scorecards import SCORECARD_KEY_FIELDS
from voxwatch.foundation.scenario import DIMENSIONS
from voxwatch.store.conversation_rows import ANCHORS, ConversationRow, TurnRow
from voxwatch.metrics.conversation_aggregate import Quality, Scorecard, Percentiles, Rate, Transcription
from voxwatch.web.bakeoff_views import SET_FIELDS as BAKEOFF_SET_FIELDS
from voxwatch.metrics.deadline_wer import DEADLINES_MS, WER_FIELDS
from voxwatch.web.compare_views import ORDERS as COMPARE_ORDERS
from voxwatch.metrics.degradation import Degradation
from voxwatch.metrics.hour_of_day import HourCell
from voxwatch.metrics.paired import COLUMNS
from voxwatch.metrics.price import BOARD_FIGURE_UNIT
from voxwatch.metrics.series import WINDOWS, MetricRow
from voxwatch.metrics.specs import METRICS
from voxwatch.preference.standings_format import BREAKDOWNS, ROW_FIELDS
from voxwatch.providers.lifecycle import CHECK_MAX_AGE_DAYS
from voxwatch.providers.registry import BOARDS, STATUSES

from voxwatch.web.family_views import SERIES_FIELDS
from voxwatch.web.source import Alert

_JSON_TYPES = {"str": "string", "int": "integer", "float": "number", "bool": "boolean"}


def _field_schema(annotation: str) -> dict:
    """JSON Schema of a dataclass field annotation (`float | None`, `tuple[float, float] | None`, ...)."""
    base = annotation.replace(" ", "")
    nullable = base.endswith("|None")
    base = base.removesuffix("|None")
    if base.startswith("tuple"):
        schema: dict = {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2}
    else:
        schema = {"type": _JSON_TYPES[base]}
    if nullable:
        schema["type"] = [schema["type"], "null"]
    return schema


def _obj(properties: dict[str, dict]) -> dict:
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


def _dataclass_schema(cls, extra: dict[str, dict] | None = None) -> dict:
    extra = extra or {}  # a field's own schema there replaces the one read from its annotation
    return _obj({**{f.name: extra.get(f.name) or _field_schema(str(f.type)) for f in fields(cls)}, **extra})


def _ref(name: str) -> dict:
    return {"$ref": f"#/components/schemas/{name}"}


def _array(items: dict) -> dict:
    return {"type": "array", "items": items}


_STRING, _NULLABLE_STRING = {"type": "string"}, {"type": ["string", "null"]}
_NULLABLE_NUMBER = {"type": ["number", "null"]}
_NULLABLE_DATE = {"type": ["string", "null"], "format": "date"}
_GENERATED = {"type": "string", "format": "date-time", "description": "when the document was made, ISO 8601 UTC to "
              "the millisecond (2026-12-05T06:00:00.000Z)"}
_STATUS = {"type": ["string", "null"], "enum": [*STATUSES, None]}
_TIME = {"type": "string", "format": "date-time", "description": "ISO 8601 UTC, to the millisecond"}
_STATUS_DATE = {"type": "string", "format": "date", "description": "the day model statuses are computed for (UTC; "
                "VOXWATCH_TODAY pins it)"}


def _json(schema: dict, description: str) -> dict:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


_ERRORS = {"503": _json(_ref("Error"), "The store cannot be read (the message never names it).")}


def _query(name: str, description: str, schema: dict) -> dict:
    return {"name": name, "in": "query", "required": False, "description": description, "schema": schema}


def _get(summary: str, ok: dict, parameters: list[dict] | None = None, errors: dict | None = None) -> dict:
    return {"get": {"summary": summary, "parameters": parameters or [],
                    "responses": {"200": ok, **_ERRORS, **(errors or {})}}}


_PRICE_FIELDS = {
    "price": {**_NULLABLE_NUMBER, "description": "the model's list price in its board's unit (price_unit; "
              "docs/METHOD.md 'Price'); null: no list price in the registry, or one per 1M audio tokens (price_list)"},
    "price_unit": {**_NULLABLE_STRING, "enum": [*BOARD_FIGURE_UNIT.values(), None],
                   "description": "the unit of price on this board"},
    "price_source": {**_NULLABLE_STRING, "description": "where the list price was read (a URL or a document)"},
    "price_checked": {**_NULLABLE_DATE, "description": "when the list price was last checked"},
    "price_stale": {"type": ["boolean", "null"], "description": f"checked more than {CHECK_MAX_AGE_DAYS} days "
                    "before status_date: the vendor may have changed it"},
    "price_list": {**_NULLABLE_STRING, "description": "the list price as the vendor states it "
                   "('$0.006 per audio minute', '$10 in / $20 out per 1M audio tokens')"}}
"""A leaderboard row's price (voxwatch/boards/prices.py), in the JSON and the CSV alike."""


_MARKS = {
    "baseline": {"type": "boolean", "description": "the model is one of voxwatch's baselines (a script, not a model: "
                 "a reference to read the models against)"},
    "preliminary": {"type": "boolean", "description": "the figures rest on too few ticks, utterances or conversations "
                    "to be settled (metrics/preliminary.py): real, but early"},
    "preliminary_reason": {**_NULLABLE_STRING, "description": "why the figures are preliminary, in words; null when "
                           "they are not"}}
"""What a leaderboard row and a conversation block say of their model and their figures."""
_LINE_MARKS = {
    **_MARKS,
    "status": {**_STATUS, "description": "the model's lifecycle status on the registry's day (retired from its "
               "vendor's shutdown date); null for an id the registry does not have"},
    "notice": {**_NULLABLE_STRING, "description": "'retired 2027-01-20; successor ...', or 'retiring 2027-01-20; ...' in "
               "the 90 days before the shutdown; null when there is nothing to say"}}
"""What a comparison line, a bake-off line and a conversation block say of their model (boards.marks)."""
_NOT_JUDGED = {"not_judged": {**_array({"type": "string", "enum": list(DIMENSIONS)}), "description": "the dimensions "
               "another line of the same table was judged on and this one was not (its adherence is a share of "
               "other verdicts); empty when none"}}


def _compare_schemas() -> dict:
    """The comparison document's schemas (web/compare_views.comparison_document)."""
    pair = {"type": ["array", "null"], "items": {"type": "number"}, "minItems": 2, "maxItems": 2}
    axis = {"lower_is_better": {"type": "boolean"}, "unit": _STRING}
    row = {"model_id": _STRING, "region": _STRING, "instrument": _NULLABLE_STRING,
           "rank": {**_NULLABLE_STRING, "description": "the places the model could hold given the paired comparisons "
                    "over the use case ('2', or '1-4' where it is not told apart from some); null: not ranked "
                    "(unranked says why)"},
           "unranked": _NULLABLE_STRING, "latency_n": {"type": "integer"}, "latency_p50": _NULLABLE_NUMBER,
           "latency_p50_ci": pair,
           "latency_p95": {**_NULLABLE_NUMBER, "description": "the latency's p95 over the pooled ok rows, beside the "
                           "p50 (null under 100 values, and on the conversations board)"},
           "latency_p95_ci": pair, "accuracy_n": {"type": "integer"},
           "accuracy": {**_NULLABLE_NUMBER, "description": "pooled WER, pooled WER at a deadline after the end of "
                        "speech (stt-stream-at-<D>ms), answer accuracy (S2S single turn) or instruction adherence"},
           "accuracy_ci": pair, "on_frontier": {"type": "boolean"},
           "quality_n": {"type": "integer", "description": "clips with a speech quality score (0 where nothing was "
                         "scored)"},
           "quality_mos": {**_NULLABLE_NUMBER, "description": "speech quality (MOS, 1-5, higher is better) of the "
                           "audio the model sent, beside its accuracy (METHOD 'Speech quality')"},
           "quality_mos_ci": pair,
           "accuracy_passed": {"type": ["integer", "null"], "description": "where the accuracy is a share of decided "
                               "items (instruction adherence): how many of accuracy_n passed; null otherwise"},
           "hallucination_n": {"type": "integer", "description": "the model's clips without speech (STT) or empty "
                               "prompts (TTS) scored in the window, whatever the use case (0: none)"},
           "hallucination": {**_NULLABLE_NUMBER, "description": "the share of them in which the model transcribed any "
                             "word (STT) or sent audible audio (TTS), lower is better; null under 5 (METHOD "
                             "'Hallucination on non-speech')"},
           "hallucination_ci": pair,
           "invented_words_per_min": {**_NULLABLE_NUMBER, "description": "STT: the words invented per minute of the "
                                      "clips without speech heard, pooled"},
           "invented_audio_ms": {**_NULLABLE_NUMBER, "description": "TTS: the mean audible ms sent per empty prompt"},
           **_LINE_MARKS, **_NOT_JUDGED, **_PRICE_FIELDS}
    return {
        "UseCase": _obj({"id": _STRING, "title": _STRING, "datasets": _array(_STRING)}),
        "CompareRow": _obj(row),
        "UseCaseComparison": _obj({
            "board": {"type": "string", "enum": list(COMPARE_BOARDS)}, "title": _STRING,
            "window": {"type": "string", "enum": list(WINDOWS)}, "generated_at": _GENERATED, "method_version": _STRING,
            "use_case": {"anyOf": [_ref("UseCase"), {"type": "null"}]}, "use_cases": _array(_ref("UseCase")),
            "latency": _obj({"metric": _STRING, "statistic": {"type": "string", "enum": ["p50", "p95"],
                                                                "description": "what ranks, the frontier and the "
                                                                               "order read (?statistic=)"}, **axis}),
            "accuracy": _obj({"figure": _STRING, "title": _STRING, **axis}), "ranks": _STRING,
            "order": {"type": "string", "enum": list(COMPARE_ORDERS), "description": "the lines' order: by rank, or by "
                      "the hallucination share (lowest first)"},
            "rows": _array(_ref("CompareRow")), "left_out": _array(_STRING)}),
    }




def document() -> dict:
    schemas = {
        "LeaderboardRow": _dataclass_schema(MetricRow, {
            "na_reason": {**_NULLABLE_STRING, "description": "why the statistics are n/a: the registry's exclusion, or n < 5"},
            "rank": {**_NULLABLE_STRING, "description": "the series' rank on its dataset, protocol and region: the "
                     "places it could hold given the paired comparisons on the ranked metric (Holm over the ranking's "
                     "pairs), '2' or '1-4'; null: superseded method, excluded, or too few samples"},
            "rank_best": {"type": ["integer", "null"], "description": "1 + the series shown faster"},
            "rank_worst": {"type": ["integer", "null"], "description": "the ranked series less those shown slower"},
            "ranked_by": {**_NULLABLE_STRING, "description": "the metric the series is ranked by"},
            "quality_mos": {**_NULLABLE_NUMBER, "description": "TTS and S2S: the mean DNSMOS P.835 OVRL (1-5, higher is "
                            "better) of the audio the model sent, over the ok rows scored; null under 5 (METHOD \"Speech quality\")"},
            "hallucination_rate": {**_NULLABLE_NUMBER, "description": "a series heard on clips without speech (STT): "
                                   "the share of the ok clips scored in which the model transcribed any word; on empty "
                                   "prompts (TTS): the share answered with audible audio; lower is better, null under 5 "
                                   "scored (hallucination_clips) (METHOD \"Hallucination on non-speech\")"},
            "invented_words_per_min": {**_NULLABLE_NUMBER, "description": "STT: the words transcribed per minute of the "
                                       "clips without speech, pooled (invented_words over their minutes)"},
            "answer_accuracy": {**_NULLABLE_NUMBER, "description": "S2S: the share of the ok replies to spoken questions "
                                "scored for an answer in which the instrument heard it (higher is better); null under 5 "
                                "scored (answer_clips) (METHOD \"Answer accuracy (S2S single turn)\")"},
            "stall_share": {**_NULLABLE_NUMBER, "description": "TTS: the share of the ok clips measured for playback "
                            "stalls that stalled at least once after the first audible sample (lower is better); null "
                            "under 5 clips (stall_clips) (METHOD \"TTS: playback stalls\")"},
            "stall_ms_p50": {**_NULLABLE_NUMBER, "description": "TTS: the median of the clips' stall totals (ms, zeros "
                             "included); stall_ms_p95 the 95th percentile (null under 100 clips)"},
            **{name: {**_NULLABLE_NUMBER, "description": f"STT streaming: pooled WER of the transcript as it stood "
                      f"{d} ms after the end of speech, over the ok rows scored at the deadlines (deadline_clips); "
                      f"null under 5 (METHOD \"WER at the deadline\")"} for d, name in zip(DEADLINES_MS, WER_FIELDS)},
            "deadline_clips": {"type": "integer", "description": "the ok rows scored at the deadlines after the end of "
                               "speech (0: batch, TTS, S2S, or rows stored before method 17)"},
            "eot_clips": {"type": "integer", "description": "streaming STT: the ok rows scored for the STT's own end "
                          "of turn; 0 for a model that emits no end-of-turn events (METHOD \"STT end of turn\")"},
            "eot_p50": {**_NULLABLE_NUMBER, "description": "streaming STT: the median ms from the end of speech's write "
                        "to the STT's first end-of-turn event after it; null under 5 rows with one"},
            "eot_false_cutoff_share": {**_NULLABLE_NUMBER, "description": "streaming STT: the share of the scored rows "
                                       "in which the STT ended the turn inside the speech (a false cut-off); null under 5"},
            "model_status": {**_STATUS, "description": "the model's status on status_date: retired from its vendor's "
                             "shutdown date (its rows stay); null for an id the registry no longer has"},
            "model_notice": {**_NULLABLE_STRING, "description": "'retired 2027-01-20; successor ...', or 'retiring "
                             "2027-01-20; ...' in the 90 days before the shutdown; null when there is nothing to say"},
            **_PRICE_FIELDS, **_MARKS}),
        "MethodChange": _obj({"from": _STRING, "to": _STRING, "on": {"type": "string", "format": "date"}}),
        "MethodNote": _obj({"model_id": _STRING, "dataset": _STRING, "region": _STRING, "text": _STRING,
                            "changes": _array(_ref("MethodChange"))}),
        "Leaderboard": _obj({
            "board": {"type": ["string", "null"], "enum": [*BOARDS, None]},
            "window": {"type": "string", "enum": list(WINDOWS)},
            "dataset": _NULLABLE_STRING,
            "speaker": {**_NULLABLE_STRING, "description": "the board over this speaker's clips only (null: every clip)"},
            "accent": {**_NULLABLE_STRING, "description": "the board over clips of this accent only (null: every clip)"},
            "generated_at": _GENERATED,
            "method_version": {**_STRING, "description": "the method version this server measures with"},
            "status_date": _STATUS_DATE,
            "ranks": {**_STRING, "description": "what a rank means, in words"},
            "intervals": _obj({"series": {**_STRING, "description": "what each row's own intervals are about"},
                               "comparisons": {**_STRING, "description": "what a comparison's interval is about"}}),
            "rows": {**_array(_ref("LeaderboardRow")), "description": "statistics at their published precision "
                     "(metrics.published: 0.1 ms, 0.001 x, fractions to 4 places); the CSV keeps full precision"},
            "notes": _array(_ref("MethodNote")),
            "comparisons": {**_array(_ref("Comparison")), "description": "the paired comparisons the ranks come "
                            "from (as /api/v1/comparisons)"}}),
        "Comparison": _obj({**{name: _STRING for name in COLUMNS[:10]},
                            "statistic": {**_STRING, "description": "a headline latency metric (the median of the "
                                          "per-clip differences) or pooled_wer (the difference of the pooled WERs)"},
                            "instrument_a": {**_STRING, "description": "TTS: the STT that scored model a ('' for none)"},
                            "instrument_b": {**_STRING, "description": "TTS: the STT that scored model b ('' for none)"},
                            "a": {**_NULLABLE_NUMBER, "description": "model a's figure on the shared clips (p50, or "
                                  "pooled WER)"},
                            "b": {**_NULLABLE_NUMBER, "description": "model b's figure on the shared clips"},
                            "estimate": {**_NULLABLE_NUMBER, "description": "b minus a on the same clips"},
                            "ci_low": {**_NULLABLE_NUMBER, "description": "the difference's 95 % interval"},
                            "ci_high": _NULLABLE_NUMBER,
                            "p_value": {**_NULLABLE_NUMBER, "description": "two-sided, clustered by utterance and tick"},
                            "p_holm": {**_NULLABLE_NUMBER, "description": "Holm-adjusted over the ranking's pairs"},
                            "shown": {"type": "boolean", "description": "the difference is shown (p_holm <= 0.05)"},
                            "cells": {"type": "integer", "description": "(clip, tick) cells both models measured"},
                            "utterances": {"type": "integer"}, "ticks": {"type": "integer"},
                            "unit": {**_STRING, "description": "ms, x, or fraction (WER)"}}),
        "Comparisons": _obj({"board": {"type": ["string", "null"], "enum": [*BOARDS, None]},
                             "window": {"type": "string", "enum": list(WINDOWS)}, "dataset": _NULLABLE_STRING,
                             "model": _NULLABLE_STRING, "generated_at": _GENERATED,
                             "method_version": _STRING, "about": {**_STRING, "description": "what a comparison is"},
                             "ranks": {**_STRING, "description": "how ranks follow from the comparisons"},
                             "comparisons": _array(_ref("Comparison"))}),
        "FamilyLine": _obj({**{name: _STRING for name in SERIES_FIELDS},
                            **_dataclass_schema(Degradation)["properties"]}),
        "FamilyCondition": _obj({"dataset": _STRING, "condition": _STRING}),
        "Family": _obj({"family": _STRING, "window": {"type": "string", "enum": list(WINDOWS)},
                        "region": _NULLABLE_STRING, "generated_at": _GENERATED,
                        "method_version": _STRING,
                        "min_paired_utterances": {"type": "integer", "description": "fewest paired utterances for a "
                                                  "WER difference (null under it, with the reason)"},
                        "clean_datasets": _array(_STRING), "conditions": _array(_ref("FamilyCondition")),
                        "regions": _array(_STRING), "rows": _array(_ref("FamilyLine"))}),
        **_compare_schemas(),
        "Exclusion": _obj({"metric": _STRING, "reason": _STRING}),
        "Model": _obj({"model_id": _STRING, "board": {"type": "string", "enum": list(BOARDS)},
                       "datasets": _array(_STRING), "regions": _array(_STRING), "method_versions": _array(_STRING),
                       "vendor": _STRING, "protocol": _NULLABLE_STRING, "baseline": _MARKS["baseline"],
                       "status": {**_STATUS, "description": "the status on status_date (retired from the shutdown date)"},
                       "notice": {**_NULLABLE_STRING, "description": "retired or retiring soon, with the date and successor"},
                       "checked": {**_NULLABLE_DATE, "description": "when the id was last checked against its vendor"},
                       "source": {**_NULLABLE_STRING, "description": "the vendor page or SDK source it was checked against"},
                       "deprecated": {**_NULLABLE_DATE, "description": "when the vendor announced its deprecation"},
                       "shutdown": {**_NULLABLE_DATE, "description": "when the vendor stops serving it"},
                       "successor": {**_NULLABLE_STRING, "description": "the registered id the vendor names as its replacement"},
                       "session_limit_s": {"type": ["integer", "null"],
                                           "description": "S2S: the longest session the vendor allows, in seconds"},
                       "exclusions": _array(_ref("Exclusion"))}),
        "Models": _obj({"window": {"type": "string", "enum": list(WINDOWS)}, "method_version": _STRING,
                        "status_date": _STATUS_DATE, "models": _array(_ref("Model"))}),
        "HistoryPoint": _obj({"day": {"type": "string", "format": "date"}, "n": {"type": "integer"},
                              "p50": {"type": ["number", "null"]}, "p95": {"type": ["number", "null"]}}),
        "HistorySeries": _obj({"metric": _STRING, "unit": _STRING, "dataset": _STRING, "region": _STRING,
                               "method_version": _STRING, "instrument": _NULLABLE_STRING,
                               "points": _array(_ref("HistoryPoint"))}),
        "HistoryFigures": _obj({"day": {"type": "string", "format": "date"}, "attempts": {"type": "integer"},
                                "error_rate": _NULLABLE_NUMBER, "timeout_rate": _NULLABLE_NUMBER,
                                "inaudible_rate": _NULLABLE_NUMBER,
                                "pooled_wer": {**_NULLABLE_NUMBER, "description": "sum(S + D + I) / sum(N) over the "
                                               "day's scored clips; null under 5 clips"},
                                "wer_clips": {"type": "integer"}}),
        "HistoryFigureSeries": _obj({"dataset": _STRING, "region": _STRING, "method_version": _STRING,
                                     "instrument": _NULLABLE_STRING, "points": _array(_ref("HistoryFigures"))}),
        "History": _obj({"model_id": _STRING, "days": {"type": "integer"}, "since": {"type": "string", "format": "date-time", "description": "the span's start, ISO 8601 UTC"},
                         "method_version": _STRING, "series": _array(_ref("HistorySeries")),
                         "figures": {**_array(_ref("HistoryFigureSeries")), "description": "each series' daily "
                                     "attempts, rates (null under 5 attempts) and pooled WER"},
                         "excluded": _array(_ref("Exclusion"))}),
        **_hour_schemas(),
        "Alert": _dataclass_schema(Alert),
        "Alerts": _obj({"available": {"type": "boolean"}, "reason": _NULLABLE_STRING, "alerts": _array(_ref("Alert"))}),
        "Health": _obj({"status": {"type": "string", "enum": ["ok", "unavailable"]},
                        "store": {"type": "string", "enum": ["postgres", "sqlite"]}, "method_version": _STRING}),
        "Error": _obj({"error": _STRING}),
        **_conversation_schemas(),
        **_preference_schemas(),
    }
    window = _query("window", "rolling window", {"type": "string", "enum": list(WINDOWS), "default": "30d"})
    dataset = _query("dataset", "only this dataset (clean and degraded datasets are never pooled)", _STRING)
    bad = {"400": _json(_ref("Error"), "A parameter is not one of its allowed values.")}
    headline = sorted({m.name for m in METRICS if m.headline})
    conversation_id = {"name": "conversation_id", "in": "path", "required": True, "schema": _STRING,
                       "description": "the conversation's id, as the board's list gives it"}
    paths = {
        "/api/v1/leaderboard": _get(
            "The rolling leaderboard: one row per series (model, dataset, region, method version, instrument) and "
            "headline metric", _json(_ref("Leaderboard"), "The board's rows."),
            [_query("board", "only this board", {"type": "string", "enum": list(BOARDS)}), window, dataset,
             _query("speaker", "the board over this speaker's clips only: every statistic and rank computed from "
                    "those rows", _STRING),
             _query("accent", "the board over clips of this accent only, as speaker", _STRING)], bad),
        "/api/v1/comparisons": {"get": {
            "summary": "Paired comparisons: every two models of a ranking (dataset, protocol, region, method "
                       "version) on the clips both measured in the same ticks, per headline latency metric and "
                       "pooled WER, with the difference's interval and Holm's verdict (what the ranks follow)",
            "parameters": [_query("board", "only this board", {"type": "string", "enum": list(BOARDS)}), window,
                           dataset, _query("model", "only pairs with this model on a side", _STRING),
                           _query("format", "csv: one line per pair and statistic",
                                  {"type": "string", "enum": ["json", "csv"], "default": "json"})],
            "responses": {"200": {"description": "The comparisons.", "content": {
                "application/json": {"schema": _ref("Comparisons")},
                "text/csv": {"schema": {"type": "string"}}}}, **_ERRORS, **bad}}},
        "/api/v1/models": _get("Every model with rows in the last 30 days",
                               _json(_ref("Models"), "The models.")),
        "/api/v1/models/{model_id}/history": _get(
            "Daily p50 and p95 of a model's headline metrics over the last 30 days (UTC days; n < 5 is null), "
            "and each series' daily attempts, error and timeout rates and pooled WER",
            _json(_ref("History"), "The model's daily series."),
            [{"name": "model_id", "in": "path", "required": True, "schema": _STRING,
              "description": "the exact model id; its '/' stays unescaped, e.g. /api/v1/models/deepgram/nova-3/history"},
             _query("metric", "only this headline metric", {"type": "string", "enum": headline}), dataset],
            {**bad, "404": _json(_ref("Error"), "No such model.")}),
        "/api/v1/models/{model_id}/hours": {"get": {
            "summary": "A model's headline metric by hour of day (0-23) and region, on UTC and on each region's local "
                       "time (its IANA zone, [schedule] time_zones; UTC where none is stated): per hour its n, p50 and "
                       "p95 with their 95 % intervals (null under 5 and 100 values), attempts and pooled WER (METHOD "
                       "'Hour of day and region'); current method, one dataset",
            "parameters": [{"name": "model_id", "in": "path", "required": True, "schema": _STRING,
                            "description": "the exact model id; its '/' stays unescaped, e.g. "
                                           "/api/v1/models/deepgram/nova-3/hours"},
                           _query("metric", "the headline metric (default: the one the model is ranked by)",
                                  {"type": "string", "enum": headline}),
                           _query("dataset", "the dataset (default: the one with most rows in the window)", _STRING),
                           window, _csv_format("one line per clock, series and hour, intervals as _low and _high")],
            "responses": {**_json_or_csv("Hours", "The model's hours."), **_ERRORS, **bad,
                          "404": _json(_ref("Error"), "No such model: neither registered nor measured in the window.")}}},
        "/api/v1/families/{family}": {"get": {
            "summary": "A dataset family's clean against degraded conditions: per STT series (model, region, method "
                       "version) and degraded condition, pooled WER on the utterances measured in both, their "
                       "difference in points with its 95 % interval, and the headline latency's p50 on each side",
            "parameters": [{"name": "family", "in": "path", "required": True, "schema": _STRING,
                            "description": "the family's name (a dataset.json's family, e.g. stt-starter)"},
                           window, _query("region", "only this region", _STRING),
                           _query("format", "csv: the lines as CSV, the interval as wer_diff_ci_low and _high",
                                  {"type": "string", "enum": ["json", "csv"], "default": "json"})],
            "responses": {"200": {"description": "The family's lines.", "content": {
                "application/json": {"schema": _ref("Family")},
                "text/csv": {"schema": {"type": "string"}}}}, **_ERRORS, **bad,
                "404": _json(_ref("Error"), "No such family: not in the catalog, and no STT row of the window.")}}},
        "/api/v1/compare/{board}": {"get": {
            "summary": "Every model of a board over a use case (its datasets pooled, METHOD 'Use cases and the "
                       "frontier'): headline latency p50 and accuracy with their 95 % intervals, rank from the paired "
                       "comparisons over the use case, price, and whether it is on the latency-accuracy frontier",
            "parameters": [{"name": "board", "in": "path", "required": True,
                            "schema": {"type": "string", "enum": list(COMPARE_BOARDS)},
                            "description": "the comparison board"},
                           _query("use_case", "the use case's id (default: clean audio, or the first); the "
                                  "document lists them with their datasets", _STRING), window,
                           _query("statistic", "the latency statistic ranks and the frontier read: p50 (the paired "
                                  "medians) or p95 (the paired p95s, METHOD 'Paired comparisons'; not on the "
                                  "conversations board)", {"type": "string", "enum": ["p50", "p95"], "default": "p50"}),
                           _query("order", "rank (the default) or hallucination: the lines by the share of clips "
                                  "without speech (or empty prompts) they made words (or sound) from, lowest first",
                                  {"type": "string", "enum": list(COMPARE_ORDERS), "default": "rank"}),
                           _query("format", "csv: one line per model, intervals as _low and _high",
                                  {"type": "string", "enum": ["json", "csv"], "default": "json"})],
            "responses": {"200": {"description": "The comparison.", "content": {
                "application/json": {"schema": _ref("UseCaseComparison")},
                "text/csv": {"schema": {"type": "string"}}}}, **_ERRORS, **bad,
                "404": _json(_ref("Error"), "No such comparison board.")}}},
        "/api/v1/alerts": _get("Regression alerts: firing, pending, and those resolved in the last 7 days",
                               _json(_ref("Alerts"), "The alerts; available is false on a store without them.")),
        "/api/v1/conversations": {"get": {
            "summary": "The S2S conversation board: per block (model, scenario version and pin, persona, turns held, "
                       "region, method version) every statistic, and the newest conversations started in the window",
            "parameters": [window, _query("model", "only this model", _STRING),
                           _query("format", "csv: the blocks as CSV, one line per block and statistic",
                                  {"type": "string", "enum": ["json", "csv"], "default": "json"})],
            "responses": {"200": {"description": "The board.", "content": {
                "application/json": {"schema": _ref("ConversationBoard")},
                "text/csv": {"schema": {"type": "string"}}}}, **_ERRORS, **bad}}},
        "/api/v1/bakeoff": {"get": {
            "summary": "The same scenario under the same persona against several agents (vendor S2S models, "
                       "cascades, a team's own deployed agents), side by side: per set (scenario version and pin, "
                       "persona, turns held, method version) each agent's conversation statistics with 95 % "
                       "intervals clustered by conversation",
            "parameters": [window, _query("scenario", "only this scenario", _STRING),
                           _query("persona", "only this persona", _STRING),
                           _query("format", "csv: one line per agent of each set, intervals as _low and _high",
                                  {"type": "string", "enum": ["json", "csv"], "default": "json"})],
            "responses": {"200": {"description": "The bake-off.", "content": {
                "application/json": {"schema": _ref("Bakeoff")},
                "text/csv": {"schema": {"type": "string"}}}}, **_ERRORS, **bad}}},
        "/api/v1/conversations/{conversation_id}": _get(
            "One conversation: its stored row and every turn (transcripts, tool calls, verdicts, timing)",
            _json(_ref("ConversationDetail"), "The conversation."), [conversation_id],
            {"404": _json(_ref("Error"), "No such conversation (or one held against an emulator).")}),
        **_ratings_paths(),
        "/api/v1/preference": {"get": {
            "summary": "The human-preference (Elo) board's newest fit: the model board, per configuration, voice, "
                       "thinking level, rubric and prompt category, the engines' agreement and the rubric clusters",
            "parameters": [_query("by", "only these boards (default: every board)",
                                  {"type": "string", "enum": list(BREAKDOWNS)}),
                           _query("format", "csv: the boards as CSV, one line per board entry",
                                  {"type": "string", "enum": ["json", "csv"], "default": "json"})],
            "responses": {"200": {"description": "The newest fit (fitted false before the first).", "content": {
                "application/json": {"schema": _ref("PreferenceBoard")},
                "text/csv": {"schema": {"type": "string"}}}}, **_ERRORS, **bad}}},
        "/api/v1/health": _get("Whether the store can be read", _json(_ref("Health"), "The store answers."),
                               errors={"503": _json(_ref("Health"), "The store cannot be read.")}),
        "/api/v1/openapi.json": _get("This document", _json({"type": "object"}, "The OpenAPI document.")),
    }
    return {
        "openapi": "3.1.0",
        "info": {"title": "voxwatch leaderboard API", "version": __version__,
                 "description": "Read-only: the public leaderboard of voice AI latency and accuracy. Rows measured "
                                "against emulators never appear. Latencies in ms, rates and WER as fractions."},
        "paths": paths,
        "components": {"schemas": schemas, "securitySchemes": {OPERATOR_SCHEME: {
            "type": "http", "scheme": "bearer",
            "description": "The operator's token (VOXWATCH_OPERATOR_TOKEN): opens operator data, the ratings export"}}},
    }


OPERATOR_SCHEME = "operatorToken"


def _ratings_paths() -> dict:
    """The preference ratings' export (ratings_io's lines: one rating with the pair it rates; rater ids, no token)."""
    from voxwatch.preference.ratings_io import FIELDS

    columns = ", ".join(FIELDS)
    kinds = {"csv": ("text/csv", f"CSV with a header line: {columns}"),
             "jsonl": ("application/x-ndjson", f"one JSON object a line with the keys {columns}")}
    return {f"/api/v1/preference/ratings.{fmt}": {"get": {
        "summary": "Operator data, not public: every preference rating, one a line: the rater's id (never their "
                   "link's token), the pair, its prompt and configurations and gold kind, the rubric, the CMOS in the "
                   "pair's A/B terms (-3..+3, positive: A better), when, and the side shown first. Only with the "
                   "server's operator token (VOXWATCH_OPERATOR_TOKEN) as a bearer token; never cross-origin",
        "parameters": [],
        "security": [{OPERATOR_SCHEME: []}],
        "responses": {"200": {"description": description, "content": {kind: {"schema": {"type": "string"}}}},
                      "401": _json(_ref("Error"), "No operator token, or not this server's."),
                      "404": _json(_ref("Error"), "This server has no operator token: the export is not served."),
                      **_ERRORS}}} for fmt, (kind, description) in kinds.items()}


def _csv_format(what: str) -> dict:
    """The `format` parameter of a document that is also served as CSV."""
    return _query("format", f"csv: {what}", {"type": "string", "enum": ["json", "csv"], "default": "json"})


def _json_or_csv(schema: str, description: str) -> dict:
    """A 200 answer that is the named schema as JSON, or its CSV text."""
    return {"200": {"description": description, "content": {"application/json": {"schema": _ref(schema)},
                                                            "text/csv": {"schema": {"type": "string"}}}}}


def _hour_schemas() -> dict:
    """The hours document (web/hour_views.py): each series' hours on each clock, each hour a HourCell."""
    row = _obj({"region": _STRING, "instrument": _NULLABLE_STRING,
                "time_zone": {"type": "string", "description": "the IANA zone the hours are read in"},
                "time_zone_stated": {"type": "boolean", "description": "false: no zone is stated for the region "
                                     "([schedule] time_zones), and its local hours are UTC's"},
                "hours": {**_array(_ref("HourCell")), "description": "the hours that have rows, in order"}})
    return {
        "HourCell": _obj({f.name: _field_schema(str(f.type)) for f in fields(HourCell) if f.name not in ("region", "zone")}),
        "HourRow": row,
        "Hours": _obj({"model_id": _STRING, "board": _STRING, "protocol": _STRING,
                       "window": {"type": "string", "enum": list(WINDOWS)}, "since": _TIME, "generated_at": _GENERATED,
                       "method_version": _STRING, "dataset": _NULLABLE_STRING, "datasets": _array(_STRING),
                       "metric": _STRING, "metrics": _array(_STRING), "unit": _STRING, "excluded": _NULLABLE_STRING,
                       "floors": _obj({"p50": {"type": "integer"}, "p95": {"type": "integer"},
                                       "pooled_wer": {"type": "integer"}}),
                       "utc": _array(_ref("HourRow")), "local": _array(_ref("HourRow"))}),
    }


def _conversation_schemas() -> dict:
    """The conversation board (voxwatch/metrics/conversation_aggregate.py's figures) and one stored conversation."""
    rate, key = _ref("ConversationRate"), {f.name: _field_schema(str(f.type)) for f in fields(ConversationRow)
                                           if f.name in SCORECARD_KEY_FIELDS}
    summary = _dataclass_schema(Scorecard, {
        "adherence": rate, "end_state": rate, "interruption": rate, "no_response": rate, "v2v": _ref("Percentiles"),
        "barge_in_stop": _ref("Percentiles"), "barge_in_stop_heard": _ref("Percentiles"), "barge_in_answered": rate, "premature": rate,
        "pause_ms": _array({"type": "number"}), "speech_quality": _ref("ConversationQuality"),
        "transcription": _ref("ConversationTranscription"),
        "dimensions": {"type": "object", "additionalProperties": rate, "description": "each dimension's pass rate"},
        "pass_hat_k": {"type": "object", "additionalProperties": {"type": ["number", "null"]},
                       "description": "pass^k of end-state success, keyed by k"}})
    block = {**summary, "properties": {**key, "title": _STRING, **_LINE_MARKS, **summary["properties"]}}
    block["required"] = list(block["properties"])
    listed = _obj({**{n: _field_schema(str(f.type)) for f in fields(ConversationRow) for n in (f.name,) if n in (
        "conversation_id", "model_id", "scenario", "scenario_version", "persona", "region", "started_at", "status",
        "reason", "turns", "failed_turns", "end_state_ok")}, "started_at": _TIME, "url": _STRING, "api_url": _STRING})
    parsed = {"type": "array", "items": {"type": "object"}}
    row = _dataclass_schema(ConversationRow, {"rotation_reasons": _array(_STRING), "reconnection_reasons": _array(_STRING),
                                              "judge": {"type": ["object", "null"]}, "started_at": _TIME,
                                              "finished_at": _TIME})
    del row["properties"]["recording"]
    row["required"].remove("recording")
    anchor = {**_NULLABLE_NUMBER, "description": "on the call recording, seconds from its start (null: not measured)"}
    turn = _dataclass_schema(TurnRow, {**{name: anchor for name in ANCHORS}, "calls": parsed, "expected": parsed, "verdicts": {
        "type": "object", "description": "per dimension in scope: {passed, reason, rule}",
        "additionalProperties": _obj({"passed": {"type": ["boolean", "null"]}, "reason": _STRING, "rule": _STRING})}})
    return {
        "ConversationRate": _dataclass_schema(Rate),
        "Percentiles": _dataclass_schema(Percentiles),
        "ConversationQuality": _dataclass_schema(Quality, {
            "mos": {**_NULLABLE_NUMBER, "description": "the mean DNSMOS P.835 OVRL (1-5) of the answered turns scored; "
                    "null under 5"},
            "interval": {"type": ["array", "null"], "items": {"type": "number"}, "minItems": 2, "maxItems": 2,
                         "description": "its 95 % interval clustered by conversation, within [1, 5]"},
            "instruments": {**_array(_STRING), "description": "the instrument(s) that scored the turns"}}),
        "ConversationTranscription": _dataclass_schema(Transcription, {
            "wer": {**_NULLABLE_NUMBER, "description": "the reply transcriber's pooled WER on a scripted agent's "
                    "replies (the reference agent's); null where none was measured"},
            "instruments": {**_array(_STRING), "description": "the instrument(s) that transcribed the replies"}}),
        "ConversationBlock": block,
        "ConversationListed": listed,
        "ConversationBoard": _obj({"window": {"type": "string", "enum": list(WINDOWS)}, "model_id": _NULLABLE_STRING,
                                   "generated_at": _GENERATED, "method_version": _STRING,
                                   "blocks": _array(_ref("ConversationBlock")), "conversations_total": {"type": "integer"},
                                   "conversations": _array(_ref("ConversationListed"))}),
        "BakeoffLine": {**summary, "properties": {
            "model_id": _STRING, "region": _STRING,
            "loopback": {"type": "boolean", "description": "answered on a loopback address (a team's agent on its own "
                         "machine, or voxwatch's reference agent): compared here, kept off the rolling boards"},
            "deployed_agent": {"type": "boolean", "description": "a team's own deployed agent (agent/<name>)"},
            **_LINE_MARKS, **_NOT_JUDGED, **summary["properties"]},
            "required": ["model_id", "region", "loopback", "deployed_agent", *_LINE_MARKS, *_NOT_JUDGED,
                         *summary["required"]]},
        "BakeoffSet": _obj({**{name: key[name] for name in BAKEOFF_SET_FIELDS}, "title": _STRING,
                            "agents": {"type": "integer"}, "lines": _array(_ref("BakeoffLine"))}),
        "Bakeoff": _obj({"window": {"type": "string", "enum": list(WINDOWS)}, "scenario": _NULLABLE_STRING,
                         "persona": _NULLABLE_STRING, "generated_at": _GENERATED, "method_version": _STRING,
                         "scenarios": _array(_STRING), "personas": _array(_STRING),
                         "sets": _array(_ref("BakeoffSet"))}),
        "ConversationRow": row,
        "ConversationTurn": turn,
        "ConversationDetail": _obj({"conversation": _ref("ConversationRow"), "baseline": _MARKS["baseline"],
                                    "url": _STRING,
                                    "recording_url": {**_NULLABLE_STRING, "description": "the two-channel recording "
                                                      "(WAV), when this server has it"},
                                    "turns": _array(_ref("ConversationTurn"))}),
    }


def _preference_schemas() -> dict:
    """The stored preference fit as voxwatch/preference/standings_format.document lays it out."""
    number, count = {"type": ["number", "null"]}, {"type": "integer"}
    row = {f: number for f in ROW_FIELDS} | {
        "rank": {"type": ["integer", "null"], "description": "1 + the entries whose whole interval lies above this "
                 "one's (overlapping intervals share a rank); null without an interval"},
        "name": _STRING, "elo": {**number, "description": "1000 + (400 / ln 10) * the ordinal fit's strength"},
        "low": {**number, "description": "the method's 95 % interval (multiway clustered variance, t)"},
        "crossed_low": {**number, "description": "the crossed rater x prompt bootstrap's 2.5th percentile"},
        "missing": {**count, "description": "crossed resamples in which it had no ratings"},
        "ratings": count, "raters": count, "prompts": count}
    section = _obj({"by": {"type": "string", "enum": list(BREAKDOWNS)},
                    "key": {**_STRING, "description": "the rubric, or facet=value of a category board"},
                    "title": _STRING, "ratings": count, "raters": count, "prompts": count, "resamples": count,
                    "first": {**number, "description": "the shown-first term (logits)"},
                    "rows": _array(_ref("PreferenceRow"))})
    clusters = _obj({"rubrics": _array(_STRING), "labels": _array(count), "reliability": {"type": "number"},
                     "chance": {"type": "number"}, "split_half_ari": number, "structure": {"type": "boolean"},
                     "correlation": _array(_array(number))})
    nullable_int, nullable_number = {"type": ["integer", "null"]}, {"type": ["number", "null"]}
    return {
        "PreferenceRow": _obj(row),
        "PreferenceSection": section,
        "RubricClusters": clusters,
        "PreferenceBoard": _obj({
            "fitted": {"type": "boolean"}, "reason": {**_NULLABLE_STRING, "description": "why there are no boards"},
            "fit_id": nullable_int, "fitted_at": {**nullable_number, "description": "unix seconds"},
            "method_version": {**_NULLABLE_STRING, "description": "the method version the fit was made under"},
            "current_method_version": _STRING, "ratings": count, "raters": count, "excluded_ratings": count,
            "resamples": nullable_int, "interval": _STRING,
            "by": {"type": ["string", "null"], "enum": [*BREAKDOWNS, None]},
            "sections": _array(_ref("PreferenceSection")),
            "engines": {"type": ["object", "null"], "additionalProperties": nullable_number,
                        "description": "Spearman's correlation between each pair of engines"},
            "clusters": {"oneOf": [_ref("RubricClusters"), {"type": "null"}]},
            "clusters_reason": _NULLABLE_STRING}),
    }
