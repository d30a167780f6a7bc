-- target: 1 A
-- Instruction adherence per time bucket (of the conversations' start) and board block (model,
-- scenario version, trial length, persona, region, method version; never pooled): the share of
-- decided in-scope turn-dimensions passed (voxwatch/metrics/conversation_aggregate.py instruction_adherence);
-- a bucket under MIN_ATTEMPTS decided turn-dimensions, or with turn-taking alone decided, has no point.
SELECT
  $__unixEpochGroupAlias(c.started_at, $__interval),
  {{conversation_series(c)}} AS metric,
  {{adherence_rate(d.passed, d.dimension)}} AS value
FROM conversations c
JOIN conversation_turns t ON t.conversation_id = c.conversation_id
CROSS JOIN LATERAL (VALUES {{dimension_values(t)}}) AS d (dimension, passed)
WHERE {{chosen_conversations(c)}}
GROUP BY 1, 2
HAVING {{has_adherence_rate(d.passed, d.dimension)}}
ORDER BY 1

-- target: 2 A
-- One dimension's pass rate per time bucket and board block: the share of the turns where it was
-- decided that passed it (dimension_rates); under MIN_ATTEMPTS decided turns, no point.
SELECT
  $__unixEpochGroupAlias(c.started_at, $__interval),
  {{conversation_series(c)}} || ' ' || d.dimension AS metric,
  {{decided_rate(d.passed)}} AS value
FROM conversations c
JOIN conversation_turns t ON t.conversation_id = c.conversation_id
CROSS JOIN LATERAL (VALUES {{dimension_values(t)}}) AS d (dimension, passed)
WHERE {{chosen_conversations(c)}}
  AND d.dimension IN (${dimension:sqlstring})
GROUP BY 1, 2
HAVING {{has_decided_rate(d.passed)}}
ORDER BY 1

-- target: 3 A
-- End-state success per time bucket and board block: the share of the conversations whose backend
-- was checked that ended in the expected state (end_state_rate); under MIN_ATTEMPTS checked
-- conversations, no point.
SELECT
  $__unixEpochGroupAlias(c.started_at, $__interval),
  {{conversation_series(c)}} AS metric,
  {{decided_rate(c.end_state_ok)}} AS value
FROM conversations c
WHERE {{chosen_conversations(c)}}
GROUP BY 1, 2
HAVING {{has_decided_rate(c.end_state_ok)}}
ORDER BY 1

-- target: 4 A
-- V2V p50 per time bucket and board block, over the turns answered in turn (v2v_per_turn; a turn
-- belongs to its conversation's bucket); under the p50's floor, no point.
SELECT
  $__unixEpochGroupAlias(c.started_at, $__interval),
  {{conversation_series(c)}} || ' p50' AS metric,
  {{percentile(50, t.v2v_ms)}} AS value
FROM conversations c
JOIN conversation_turns t ON t.conversation_id = c.conversation_id
WHERE {{chosen_conversations(c)}}
  AND t.v2v_ms IS NOT NULL
GROUP BY 1, 2
HAVING {{has_percentile(50, t.v2v_ms)}}
ORDER BY 1

-- target: 4 B
-- V2V p95 per time bucket and board block; under the p95's floor (enough turns to put TAIL_N
-- beyond it), no point.
SELECT
  $__unixEpochGroupAlias(c.started_at, $__interval),
  {{conversation_series(c)}} || ' p95' AS metric,
  {{percentile(95, t.v2v_ms)}} AS value
FROM conversations c
JOIN conversation_turns t ON t.conversation_id = c.conversation_id
WHERE {{chosen_conversations(c)}}
  AND t.v2v_ms IS NOT NULL
GROUP BY 1, 2
HAVING {{has_percentile(95, t.v2v_ms)}}
ORDER BY 1

-- target: 5 A
-- Silence-gap latency per time bucket and board block (Coval: the mean of the gaps of at least
-- half a second, pooled over the bucket's turns; silence_gap), in seconds; no gap that long, no point.
SELECT
  $__unixEpochGroupAlias(c.started_at, $__interval),
  {{conversation_series(c)}} AS metric,
  {{silence_gap(t.gap_s)}} AS value
FROM conversations c
JOIN conversation_turns t ON t.conversation_id = c.conversation_id
WHERE {{chosen_conversations(c)}}
GROUP BY 1, 2
HAVING {{has_silence_gap(t.gap_s)}}
ORDER BY 1

-- target: 6 A
-- Interruption and no-response rates per time bucket and board block: the share of measured
-- turns (interruption_rate, no_response_rate); under MIN_ATTEMPTS measured turns, no point.
SELECT time, metric, value FROM (
  SELECT
    $__unixEpochGroupAlias(c.started_at, $__interval),
    {{conversation_series(c)}} AS series,
    {{decided_rate(t.interrupted)}} AS interrupted,
    {{decided_rate(t.no_response)}} AS no_response
  FROM conversations c
  JOIN conversation_turns t ON t.conversation_id = c.conversation_id
  WHERE {{chosen_conversations(c)}}
  GROUP BY 1, 2
) b
CROSS JOIN LATERAL (VALUES (b.series || ' interruptions', b.interrupted),
                           (b.series || ' no response', b.no_response)) AS r (metric, value)
WHERE r.value IS NOT NULL
ORDER BY 1, 2

-- target: 7 A
-- The board per block over the time range: every statistic of scorecard but pass^k and the
-- intervals (the CLI board and the web page show those), each under its own floor.
WITH chosen AS (
  SELECT c.* FROM conversations c WHERE {{chosen_conversations(c)}}
), blocks AS (
  SELECT c.model_id, c.scenario, c.scenario_version, c.scenario_pin, c.persona, c.turns, c.whole, c.region,
         c.method_version, count(*) AS conversations, {{decided_rate(c.end_state_ok)}} AS end_state
  FROM chosen c
  GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9
), turns AS (
  SELECT c.model_id, c.scenario, c.scenario_version, c.scenario_pin, c.persona, c.turns, c.whole, c.region,
         c.method_version,
         {{percentile(50, t.v2v_ms)}} AS v2v_p50,
         {{percentile(95, t.v2v_ms)}} AS v2v_p95,
         {{silence_gap(t.gap_s)}} AS silence_gap_s,
         {{decided_rate(t.interrupted)}} AS interruption_rate,
         {{decided_rate(t.no_response)}} AS no_response_rate
  FROM chosen c
  JOIN conversation_turns t ON t.conversation_id = c.conversation_id
  GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9
), dimensions AS (
  SELECT c.model_id, c.scenario, c.scenario_version, c.scenario_pin, c.persona, c.turns, c.whole, c.region,
         c.method_version,
         {{adherence_rate(d.passed, d.dimension)}} AS adherence,
         {{dimension_rates(d)}}
  FROM chosen c
  JOIN conversation_turns t ON t.conversation_id = c.conversation_id
  CROSS JOIN LATERAL (VALUES {{dimension_values(t)}}) AS d (dimension, passed)
  GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9
)
SELECT
  b.model_id AS model, b.scenario, b.scenario_version AS version, left(b.scenario_pin, 12) AS pin, b.persona,
  b.turns AS turns_held, b.whole, b.region, b.method_version AS method, b.conversations,
  d.adherence, {{dimension_columns(d)}}, b.end_state,
  t.v2v_p50, t.v2v_p95, t.silence_gap_s, t.interruption_rate, t.no_response_rate
FROM blocks b
LEFT JOIN turns t USING (model_id, scenario, scenario_version, scenario_pin, persona, turns, whole, region, method_version)
LEFT JOIN dimensions d USING (model_id, scenario, scenario_version, scenario_pin, persona, turns, whole, region, method_version)
ORDER BY b.model_id, b.scenario, b.scenario_version, b.scenario_pin, b.persona, b.turns, b.whole, b.region,
         b.method_version

-- target: 8 A
-- The newest conversations in the time range, each with its own adherence, V2V p50 and silence-gap
-- latency (each under its floor), status and reason.
SELECT
  to_timestamp(c.started_at) AS started, c.model_id AS model, c.scenario, c.scenario_version AS version,
  c.persona, c.region, c.method_version AS method, c.status, c.turns, c.failed_turns, c.whole,
  c.end_state_ok AS end_state, a.adherence, s.v2v_p50, s.silence_gap_s, c.conversation_id, c.reason
FROM conversations c
CROSS JOIN LATERAL (
  SELECT {{adherence_rate(d.passed, d.dimension)}} AS adherence
  FROM conversation_turns t
  CROSS JOIN LATERAL (VALUES {{dimension_values(t)}}) AS d (dimension, passed)
  WHERE t.conversation_id = c.conversation_id
) a
CROSS JOIN LATERAL (
  SELECT {{percentile(50, t.v2v_ms)}} AS v2v_p50, {{silence_gap(t.gap_s)}} AS silence_gap_s
  FROM conversation_turns t
  WHERE t.conversation_id = c.conversation_id
) s
WHERE {{chosen_conversations(c)}}
ORDER BY c.started_at DESC, c.conversation_id
LIMIT 200
