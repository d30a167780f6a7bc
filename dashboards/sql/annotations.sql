-- The annotations every dashboard with time series draws (a dashboard's own sql file may define an
-- annotation of the same name instead). A dashboard about one board has a hidden constant `board`.

-- annotation: Alerts
-- Each regression alert from when it fired to when it resolved (still open: to now), as a region
-- annotation on every time series; pending alerts (not fired) are not drawn. Emulator-only models never.
SELECT to_timestamp(a.fired_at) AS time, to_timestamp(a.resolved_at) AS timeend, a.summary AS text,
       concat_ws(',', 'alert', a.kind, a.state, a.metric, a.region) AS tags
FROM alerts a
WHERE a.fired_at IS NOT NULL AND a.fired_at <= $__unixEpochTo()
  AND coalesce(a.resolved_at, $__unixEpochTo()) >= $__unixEpochFrom()
  AND {{chosen_alerts(a)}}
ORDER BY a.fired_at, a.id

-- annotation: Method changes
-- The first row of each method version (docs/METHOD.md): a version measured in the time range and
-- not in the 30 days before it is drawn where it first appears; series are never pooled across it.
SELECT to_timestamp(min(o.started_at)) AS time,
       'method ' || o.method_version || ' first measured' AS text,
       concat_ws(',', 'method change', 'method ' || o.method_version) AS tags
FROM observations_during($__unixEpochFrom() - {{window_seconds('30d')}}, $__unixEpochTo()) o
WHERE o.emulator IS NOT TRUE AND o.board IN (${board:sqlstring}) AND o.model_id IN (${model:sqlstring})
GROUP BY o.method_version
HAVING min(o.started_at) >= $__unixEpochFrom()
ORDER BY 1
