-- target: 1 A
-- The p50 of the chosen metric per time bucket and series (model, dataset, region, method
-- version; never pooled), over `ok` rows; a bucket under the p50's floor (voxwatch/metrics/series.py) has no point.
SELECT
  $__unixEpochGroupAlias(o.started_at, $__interval),
  concat_ws(' ', o.model_id, o.dataset, o.region, 'method ' || o.method_version, m.metric, 'p50') AS metric,
  {{percentile(50, m.value)}} AS value
FROM observations_during($__unixEpochFrom(), $__unixEpochTo()) o
CROSS JOIN LATERAL (VALUES {{metric_values(o)}}) AS m (metric, value)
WHERE {{chosen(o, ${board:sqlstring})}}
  AND o.status = 'ok'
  AND m.metric = ${metric:sqlstring}
  AND m.value IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM registry_exclusions e WHERE e.model_id = o.model_id AND e.metric = m.metric)
GROUP BY 1, 2
HAVING {{has_percentile(50, m.value)}}
ORDER BY 1

-- target: 1 B
-- The p95 of the chosen metric per time bucket and series (model, dataset, region, method
-- version; never pooled), over `ok` rows; a bucket under the p95's floor (enough values to put
-- TAIL_N beyond it, voxwatch/metrics/series.py) has no point.
SELECT
  $__unixEpochGroupAlias(o.started_at, $__interval),
  concat_ws(' ', o.model_id, o.dataset, o.region, 'method ' || o.method_version, m.metric, 'p95') AS metric,
  {{percentile(95, m.value)}} AS value
FROM observations_during($__unixEpochFrom(), $__unixEpochTo()) o
CROSS JOIN LATERAL (VALUES {{metric_values(o)}}) AS m (metric, value)
WHERE {{chosen(o, ${board:sqlstring})}}
  AND o.status = 'ok'
  AND m.metric = ${metric:sqlstring}
  AND m.value IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM registry_exclusions e WHERE e.model_id = o.model_id AND e.metric = m.metric)
GROUP BY 1, 2
HAVING {{has_percentile(95, m.value)}}
ORDER BY 1

-- target: 2 A
-- Error rate per time bucket and series: the statuses of RATES["error_rate"] over attempts (an
-- `excluded` row is not an attempt); a bucket under MIN_ATTEMPTS attempts has no point.
SELECT
  $__unixEpochGroupAlias(o.started_at, $__interval),
  concat_ws(' ', o.model_id, o.dataset, o.region, 'method ' || o.method_version, 'errors') AS metric,
  {{rate(error_rate, o.status)}} AS value
FROM observations_during($__unixEpochFrom(), $__unixEpochTo()) o
WHERE {{chosen(o, ${board:sqlstring})}}
GROUP BY 1, 2
HAVING {{has_rate(o.status)}}
ORDER BY 1

-- target: 3 A
-- Timeout and inaudible rates per time bucket and series (RATES["timeout_rate"] and
-- RATES["inaudible_rate"] over attempts); a bucket under MIN_ATTEMPTS attempts has no point.
SELECT time, metric, value FROM (
  SELECT
    $__unixEpochGroupAlias(o.started_at, $__interval),
    concat_ws(' ', o.model_id, o.dataset, o.region, 'method ' || o.method_version) AS series,
    {{rate(timeout_rate, o.status)}} AS timeouts,
    {{rate(inaudible_rate, o.status)}} AS inaudible
  FROM observations_during($__unixEpochFrom(), $__unixEpochTo()) o
  WHERE {{chosen(o, ${board:sqlstring})}}
  GROUP BY 1, 2
  HAVING {{has_rate(o.status)}}
) b
CROSS JOIN LATERAL (VALUES (b.series || ' timeouts', b.timeouts), (b.series || ' inaudible', b.inaudible)) AS r (metric, value)
ORDER BY 1, 2

-- target: 4 A
-- Attempts and failures per dataset and region over the dashboard's time range, each rate as the
-- leaderboard counts it (RATES of voxwatch/metrics/series.py, over attempts; n/a under MIN_ATTEMPTS).
SELECT
  o.model_id AS model, o.dataset, o.region, o.method_version AS method,
  {{attempts(o.status)}} AS attempts,
  {{rate(error_rate, o.status)}} AS error_rate,
  {{rate(timeout_rate, o.status)}} AS timeout_rate,
  {{rate(inaudible_rate, o.status)}} AS inaudible_rate,
  string_agg(DISTINCT o.status, ', ' ORDER BY o.status) FILTER (WHERE o.status <> 'ok') AS failure_kinds,
  to_timestamp(max(o.started_at)) AS newest_row
FROM observations_during($__unixEpochFrom(), $__unixEpochTo()) o
WHERE {{chosen(o, ${board:sqlstring})}}
GROUP BY o.model_id, o.dataset, o.region, o.method_version
ORDER BY o.model_id, o.dataset, o.region, o.method_version

-- target: 5 A
-- Availability per provider and time bucket: attempts that succeeded over all attempts
-- (voxwatch/metrics/series.py availability: SUCCEEDED over attempts, an `excluded` row is not one), per model
-- and method version over the chosen datasets and regions; a bucket under MIN_ATTEMPTS attempts has no point.
SELECT
  $__unixEpochGroupAlias(o.started_at, $__interval),
  concat_ws(' ', o.model_id, 'method ' || o.method_version) AS metric,
  {{availability(o.status)}} AS value
FROM observations_during($__unixEpochFrom(), $__unixEpochTo()) o
WHERE {{chosen(o, ${board:sqlstring})}}
GROUP BY 1, 2
HAVING {{has_rate(o.status)}}
ORDER BY 1, 2

-- target: 6 A
-- Each series' regions side by side over the time range: availability and the failure rates per
-- region (voxwatch/metrics/series.py), and how far each region's availability is below the series' best region.
SELECT
  o.model_id AS model, o.dataset, o.method_version AS method, o.region,
  {{attempts(o.status)}} AS attempts,
  {{availability(o.status)}} AS availability,
  {{rate(error_rate, o.status)}} AS error_rate,
  {{rate(timeout_rate, o.status)}} AS timeout_rate,
  {{availability(o.status)}}
    - max({{availability(o.status)}}) OVER (PARTITION BY o.model_id, o.dataset, o.method_version) AS vs_best_region
FROM observations_during($__unixEpochFrom(), $__unixEpochTo()) o
WHERE {{chosen(o, ${board:sqlstring})}}
GROUP BY o.model_id, o.dataset, o.method_version, o.region
ORDER BY o.model_id, o.dataset, o.method_version, o.region

-- target: 7 A
-- The chosen latency metrics by hour of day in UTC (0-23) per series over the time range: each hour's n,
-- p50 and p95 over its `ok` rows, as voxwatch/metrics/hour_of_day.py summarizes an hour (the floors of
-- voxwatch/metrics/series.py: p95 needs 100 values); the web's /model/<id>/hours reads local time too.
SELECT
  o.model_id AS model, o.dataset, o.method_version AS method, o.region, m.metric,
  (floor(o.started_at / 3600)::bigint % 24)::int AS hour,
  count(m.value) AS n,
  {{percentile(50, m.value)}} AS p50,
  {{percentile(95, m.value)}} AS p95
FROM observations_during($__unixEpochFrom(), $__unixEpochTo()) o
CROSS JOIN LATERAL (VALUES {{metric_values(o)}}) AS m (metric, value)
WHERE {{chosen(o, ${board:sqlstring})}}
  AND o.status = 'ok'
  AND m.metric IN (${metric:sqlstring})
  AND m.metric IN ({{metrics_in_unit(ms)}})
  AND m.value IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM registry_exclusions e WHERE e.model_id = o.model_id AND e.metric = m.metric)
GROUP BY 1, 2, 3, 4, 5, 6
ORDER BY 1, 2, 3, 4, 5, 6
