-- target: 1 A
-- The rolling leaderboard of one board, as `voxwatch leaderboard` prints it, for the metrics of one unit
-- (voxwatch/metrics/specs.py; a Grafana field has one unit, so the ms and the x real time metrics are two tables): the aggregates table
-- (recomputed on every write, never holding emulator rows), one row per series and metric; method
-- versions are separate rows, never pooled; registry exclusions (the registry_exclusions table the
-- store keeps in sync with voxwatch/providers/registry.toml) are blanked with their reason.
-- Every number is voxwatch/metrics/series.py's, computed in Python when the series' rows were written.
SELECT
  a.model_id AS model, a.dataset, a.region, a.method_version AS method, NULLIF(a.instrument, '') AS instrument,
  a.metric,
  CASE WHEN e.reason IS NULL THEN a.n ELSE 0 END AS n,
  CASE WHEN e.reason IS NULL THEN a.mean END AS mean,
  CASE WHEN e.reason IS NULL THEN a.mean_ci_low END AS mean_ci_low,
  CASE WHEN e.reason IS NULL THEN a.mean_ci_high END AS mean_ci_high,
  CASE WHEN e.reason IS NULL THEN a.p50 END AS p50,
  CASE WHEN e.reason IS NULL THEN a.p50_ci_low END AS p50_ci_low,
  CASE WHEN e.reason IS NULL THEN a.p50_ci_high END AS p50_ci_high,
  CASE WHEN e.reason IS NULL THEN a.p95 END AS p95,
  CASE WHEN e.reason IS NULL THEN a.p95_ci_low END AS p95_ci_low,
  CASE WHEN e.reason IS NULL THEN a.p95_ci_high END AS p95_ci_high,
  CASE WHEN e.reason IS NULL THEN a.p99 END AS p99,
  CASE WHEN e.reason IS NULL THEN a.max END AS max,
  CASE WHEN e.reason IS NULL THEN a.std END AS std,
  a.attempts, a.utterances, a.ticks,
  a.error_rate, a.error_rate_ci_low, a.error_rate_ci_high,
  a.timeout_rate, a.timeout_rate_ci_low, a.timeout_rate_ci_high, a.inaudible_rate,
  a.pooled_wer, a.wer_ci_low, a.wer_ci_high, a.wer_words, a.wer_clips,
  a.clip_wer_p50, a.clip_wer_p95, a.clip_wer_max,
  NULLIF(concat_ws('; ',
    e.reason,
    CASE WHEN e.reason IS NULL AND a.n < {{MIN_N}} THEN 'n < {{MIN_N}}: n/a'
         WHEN e.reason IS NULL AND a.p95 IS NULL THEN 'n < {{floor_of(95)}}: p95 n/a'
         WHEN e.reason IS NULL AND a.p99 IS NULL THEN 'n < {{floor_of(99)}}: p99 n/a' END,
    CASE WHEN min(a.method_version) OVER w <> max(a.method_version) OVER w
         THEN 'series changed method: versions shown apart' END), '') AS note
FROM aggregates a
LEFT JOIN registry_exclusions e ON e.model_id = a.model_id AND e.metric = a.metric
WHERE a.board IN (${board:sqlstring})
  AND a.time_window = ${window:sqlstring}
  AND a.metric IN ({{metrics_in_unit(ms)}})
  AND a.newest_at >= extract(epoch FROM now()) - {{window_seconds(${window:sqlstring})}}
  AND a.model_id IN (${model:sqlstring})
  AND a.dataset IN (${dataset:sqlstring})
  AND a.region IN (${region:sqlstring})
WINDOW w AS (PARTITION BY a.board, a.model_id, a.dataset, a.region, a.instrument, a.metric)
ORDER BY a.model_id, a.dataset, a.region, a.method_version, a.instrument, a.metric_order

-- target: 2 A
-- When each board last received a row per region and method (a stalled worker shows here first).
SELECT a.board, a.region, a.method_version AS method, count(DISTINCT a.model_id) AS models,
       count(DISTINCT a.dataset) AS datasets, to_timestamp(max(a.newest_at)) AS newest_row,
       to_timestamp(max(a.computed_at)) AS refreshed
FROM aggregates a
WHERE a.time_window = '30d'
  AND a.board IN (${board:sqlstring})
  AND a.model_id IN (${model:sqlstring})
  AND a.dataset IN (${dataset:sqlstring})
  AND a.region IN (${region:sqlstring})
GROUP BY a.board, a.region, a.method_version
ORDER BY a.board, a.region, a.method_version

-- target: 3 A = 1 A with {{metrics_in_unit(x)}}

-- target: 4 A
-- Paired comparisons: every two models of a ranking (dataset, protocol, region, method version) on the clips
-- both measured in the same ticks (voxwatch/metrics/paired.py, kept in the comparisons table as ticks finish).
-- Latency: the median of the per-clip differences, b minus a; WER: the difference of the pooled WERs. `shown` is
-- Holm's verdict over the ranking's pairs (5 % family-wise): the board's ranks follow only shown differences.
SELECT c.dataset, c.protocol, c.region, c.method_version AS method, c.statistic, c.model_a, c.model_b,
       c.a, c.b, c.estimate, c.ci_low, c.ci_high, c.p_value, c.p_holm, c.shown, c.cells, c.ticks
FROM comparisons c
WHERE c.time_window = ${window:sqlstring}
  AND c.board IN (${board:sqlstring})
  AND c.dataset IN (${dataset:sqlstring})
  AND c.region IN (${region:sqlstring})
  AND (c.model_a IN (${model:sqlstring}) OR c.model_b IN (${model:sqlstring}))
ORDER BY c.board, c.dataset, c.protocol, c.region, c.method_version, c.statistic, c.model_a, c.instrument_a, c.model_b,
         c.instrument_b

-- target: 5 A
-- The STT's own end of turn (docs/METHOD.md "STT end of turn"), per streaming series: the share of the clips
-- it ended the turn in while the caller was still speaking (false cut-offs; the noisegap datasets hold a 0.5 s
-- mid-turn pause) beside the ms from the end of speech to its end of turn (p50, p95), each with its 95 %
-- interval: the trade-off a turn detector makes. From the aggregates table: voxwatch/metrics/series.py's
-- eot_figures, computed in Python when the series' rows were written. eot_clips 0: the model emits no
-- end-of-turn events (the registry's end_of_turn), said in the note.
SELECT DISTINCT ON (a.model_id, a.dataset, a.region, a.method_version)
  a.model_id AS model, a.dataset, a.region, a.method_version AS method,
  a.eot_false_cutoff_share, a.eot_false_cutoff_share_ci_low, a.eot_false_cutoff_share_ci_high,
  a.eot_p50, a.eot_p50_ci_low, a.eot_p50_ci_high, a.eot_p95, a.eot_clips, a.eot_false_cutoffs,
  CASE WHEN a.eot_clips = 0 THEN 'no end-of-turn events' END AS note
FROM aggregates a
WHERE a.board = 'stt' AND a.protocol = 'stt-stream'
  AND a.time_window = ${window:sqlstring}
  AND a.newest_at >= extract(epoch FROM now()) - {{window_seconds(${window:sqlstring})}}
  AND a.model_id IN (${model:sqlstring})
  AND a.dataset IN (${dataset:sqlstring})
  AND a.region IN (${region:sqlstring})
ORDER BY a.model_id, a.dataset, a.region, a.method_version, a.metric_order

-- target: 6 A
-- Hallucination on non-speech (docs/METHOD.md "Hallucination on non-speech"), as `voxwatch leaderboard` prints it:
-- per series heard on clips without speech (STT) or empty prompts (TTS), the share with any invented word
-- (or audible audio) and its 95 % interval, the words invented per minute heard (STT) and the mean audible
-- ms (TTS); the aggregates table's figures, computed by voxwatch/metrics/series.py when the rows were
-- written (one row per series: its figures repeat on each metric's row; n/a under MIN_N scored).
SELECT
  a.board, a.model_id AS model, a.dataset, a.region, a.method_version AS method,
  a.hallucination_rate, a.hallucination_rate_ci_low, a.hallucination_rate_ci_high, a.hallucination_clips,
  a.invented_words, a.invented_words_per_min, a.invented_words_per_min_ci_low, a.invented_words_per_min_ci_high,
  a.invented_audio_ms
FROM aggregates a
WHERE a.board IN (${board:sqlstring})
  AND a.time_window = ${window:sqlstring}
  AND a.metric_order = 0
  AND a.hallucination_clips > 0
  AND a.newest_at >= extract(epoch FROM now()) - {{window_seconds(${window:sqlstring})}}
  AND a.model_id IN (${model:sqlstring})
  AND a.dataset IN (${dataset:sqlstring})
  AND a.region IN (${region:sqlstring})
ORDER BY a.board, a.model_id, a.dataset, a.region, a.method_version, NULLIF(a.instrument, '')
