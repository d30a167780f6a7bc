-- target: 1 A
-- Median TTFB and median leading silence per time bucket and series: which part of TTFA moved.
-- A bucket under the p50's floor (voxwatch/metrics/series.py) has no point.
SELECT
  $__unixEpochGroupAlias(o.started_at, $__interval),
  concat_ws(' ', o.model_id, o.dataset, o.region, 'method ' || o.method_version, c.component, 'p50') AS metric,
  {{percentile(50, c.value)}} AS value
FROM observations_during($__unixEpochFrom(), $__unixEpochTo()) o
CROSS JOIN LATERAL (VALUES ('TTFB', o.ttfb_ms), ('leading silence', o.leading_silence_ms)) AS c (component, value)
WHERE {{chosen(o, 'tts')}}
  AND o.status = 'ok'
  AND c.value IS NOT NULL
GROUP BY 1, 2
HAVING {{has_percentile(50, c.value)}}
ORDER BY 1

-- target: 2 A
-- Mean TTFA split into its parts per series: TTFB + leading silence + late audio (TTFA minus both:
-- playout stalls when the stream arrives slower than real time). Means add up; medians would not.
-- Over the rows that have all three; a series under MIN_N of them has no bar.
SELECT
  concat_ws(' ', o.model_id, o.dataset, o.region, 'method ' || o.method_version) AS series,
  {{mean(o.ttfb_ms)}} AS "TTFB",
  {{mean(o.leading_silence_ms)}} AS "leading silence",
  {{mean(o.ttfa_ms - o.ttfb_ms - o.leading_silence_ms)}} AS "late audio"
FROM observations_during($__unixEpochFrom(), $__unixEpochTo()) o
WHERE {{chosen(o, 'tts')}}
  AND o.status = 'ok'
  AND o.ttfa_ms IS NOT NULL AND o.ttfb_ms IS NOT NULL AND o.leading_silence_ms IS NOT NULL
GROUP BY o.model_id, o.dataset, o.region, o.method_version
HAVING {{has_n(o.ttfa_ms)}}
ORDER BY 1

-- target: 3 A
-- TTFA and its components per series over the time range, over the rows that have all three;
-- each statistic is n/a under its floor (voxwatch/metrics/series.py: p95 needs 100 values).
SELECT
  o.model_id AS model, o.dataset, o.region, o.method_version AS method,
  count(*) AS n,
  {{percentile(50, o.ttfa_ms)}} AS ttfa_p50,
  {{percentile(95, o.ttfa_ms)}} AS ttfa_p95,
  {{percentile(50, o.ttfb_ms)}} AS ttfb_p50,
  {{percentile(95, o.ttfb_ms)}} AS ttfb_p95,
  {{percentile(50, o.leading_silence_ms)}} AS silence_p50,
  {{percentile(95, o.leading_silence_ms)}} AS silence_p95,
  {{mean(o.leading_silence_ms)}} / NULLIF({{mean(o.ttfa_ms)}}, 0) AS silence_share
FROM observations_during($__unixEpochFrom(), $__unixEpochTo()) o
WHERE {{chosen(o, 'tts')}}
  AND o.status = 'ok'
  AND o.ttfa_ms IS NOT NULL AND o.ttfb_ms IS NOT NULL AND o.leading_silence_ms IS NOT NULL
GROUP BY o.model_id, o.dataset, o.region, o.method_version
ORDER BY o.model_id, o.dataset, o.region, o.method_version

-- target: 4 A
-- Playback stalls per series over the time range (docs/METHOD.md "TTS: playback stalls"), over the ok
-- rows measured for them: the share of clips that stalled at least once (a stall total above 0; n/a
-- under MIN_N clips) and the p50 and p95 of the clips' stall totals, zeros included (p95 needs 100).
SELECT
  o.model_id AS model, o.dataset, o.region, o.method_version AS method,
  count(*) AS clips,
  {{share(o.stall_ms > 0)}} AS stalled_share,
  {{percentile(50, o.stall_ms)}} AS stall_total_p50,
  {{percentile(95, o.stall_ms)}} AS stall_total_p95
FROM observations_during($__unixEpochFrom(), $__unixEpochTo()) o
WHERE {{chosen(o, 'tts')}}
  AND o.status = 'ok'
  AND o.stall_ms IS NOT NULL
GROUP BY o.model_id, o.dataset, o.region, o.method_version
ORDER BY o.model_id, o.dataset, o.region, o.method_version
