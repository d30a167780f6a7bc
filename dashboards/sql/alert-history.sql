-- target: 1 A
-- Alerts open now (pending: the condition is seen but not yet confirmed; firing: notified).
SELECT count(*) FILTER (WHERE a.state = 'firing') AS firing,
       count(*) FILTER (WHERE a.state = 'pending') AS pending
FROM alerts a
WHERE a.state <> 'resolved'
  -- alerts are evaluated on non-emulator rows only: chosen_alerts keeps out any raised for a model known only from emulators
  AND {{chosen_alerts(a)}}

-- target: 2 A
-- Alerts that fired per time bucket, by kind.
SELECT
  $__unixEpochGroupAlias(a.fired_at, $__interval),
  a.kind AS metric,
  count(*)::float8 AS value
FROM alerts a
WHERE a.fired_at IS NOT NULL
  AND $__unixEpochFilter(a.fired_at)
  -- alerts are evaluated on non-emulator rows only: chosen_alerts keeps out any raised for a model known only from emulators
  AND {{chosen_alerts(a)}}
GROUP BY 1, 2
ORDER BY 1

-- target: 3 A
-- Every alert open at some point of the time range, newest first.
SELECT
  a.state, a.kind, a.model_id AS model, a.metric, a.dataset, a.region, a.method_version AS method,
  to_timestamp(a.opened_at) AS opened, to_timestamp(a.fired_at) AS fired, to_timestamp(a.resolved_at) AS resolved,
  a.recent_value, a.baseline_value, a.p_value, a.n_recent, a.n_baseline, a.summary
FROM alerts a
WHERE a.opened_at <= $__unixEpochTo()
  AND (a.state <> 'resolved' OR coalesce(a.resolved_at, a.last_evaluated_at) >= $__unixEpochFrom())
  -- alerts are evaluated on non-emulator rows only: chosen_alerts keeps out any raised for a model known only from emulators
  AND {{chosen_alerts(a)}}
ORDER BY a.opened_at DESC
LIMIT 1000

-- target: 4 A
-- Every webhook delivery attempt in the time range (targets by their configured name, never a URL).
SELECT
  to_timestamp(d.at) AS at, d.event, d.target, d.attempt, d.ok, d.status_code, d.error,
  a.kind, a.model_id AS model, a.metric, a.dataset, a.region, a.state AS alert_state
FROM alert_deliveries d
JOIN alerts a ON a.id = d.alert_id
WHERE $__unixEpochFilter(d.at)
  -- alerts are evaluated on non-emulator rows only: chosen_alerts keeps out any raised for a model known only from emulators
  AND {{chosen_alerts(a)}}
ORDER BY d.at DESC, d.id DESC
LIMIT 1000
