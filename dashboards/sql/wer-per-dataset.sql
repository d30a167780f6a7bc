-- target: 1 A
-- Pooled WER (sum of S + D + I over sum of reference words) per time bucket and series; a bucket
-- under MIN_N scored clips has no point.
SELECT
  $__unixEpochGroupAlias(o.started_at, $__interval),
  concat_ws(' ', o.model_id, o.dataset, o.region, 'method ' || o.method_version) AS metric,
  {{pooled_wer(o.substitutions + o.deletions + o.insertions, o.ref_words)}} AS value
FROM observations_during($__unixEpochFrom(), $__unixEpochTo()) o
WHERE {{chosen(o, 'stt')}}
  AND o.status = 'ok'
  AND o.ref_words IS NOT NULL
GROUP BY 1, 2
HAVING {{has_pooled_wer(o.ref_words)}}
ORDER BY 1

-- target: 2 A
-- Pooled WER per dataset over the time range: clean and degraded datasets are separate rows.
-- Per-clip WER (each clip's own, for its distribution) beside it; each n/a under its floor.
SELECT
  o.model_id AS model, o.dataset, o.condition, o.region, o.method_version AS method,
  count(*) AS clips, sum(o.ref_words) AS words,
  {{pooled_wer(o.substitutions + o.deletions + o.insertions, o.ref_words)}} AS pooled_wer,
  {{percentile(50, c.wer)}} AS clip_wer_p50,
  {{percentile(95, c.wer)}} AS clip_wer_p95,
  {{maximum(c.wer)}} AS clip_wer_max
FROM observations_during($__unixEpochFrom(), $__unixEpochTo()) o
CROSS JOIN LATERAL (SELECT {{clip_wer(o.substitutions + o.deletions + o.insertions, o.ref_words)}} AS wer) AS c
WHERE {{chosen(o, 'stt')}}
  AND o.status = 'ok'
  AND o.ref_words IS NOT NULL
GROUP BY o.model_id, o.dataset, o.condition, o.region, o.method_version
ORDER BY o.model_id, o.dataset, o.region, o.method_version

-- target: 3 A
-- Clean vs degraded, paired: each utterance's WER on a degraded dataset minus the same
-- utterance's WER on the clean dataset of its family, for the same model, region and method
-- version (an utterance measured more than once is pooled within its dataset first); then the
-- per-pair deltas are summarised; every figure is n/a under MIN_N pairs (voxwatch/metrics/series.py).
WITH clip AS (
  SELECT o.model_id, o.region, o.method_version, o.family, o.utterance_id, o.dataset, o.condition,
         sum(o.substitutions + o.deletions + o.insertions)::float8 AS errors, sum(o.ref_words)::float8 AS words
  FROM observations_during($__unixEpochFrom(), $__unixEpochTo()) o
  WHERE o.emulator IS NOT TRUE
    AND $__unixEpochFilter(o.started_at)
    AND o.board = 'stt'
    AND o.status = 'ok'
    AND o.ref_words IS NOT NULL
    AND o.utterance_id IS NOT NULL
    AND o.model_id IN (${model:sqlstring})
    AND o.region IN (${region:sqlstring})
  GROUP BY o.model_id, o.region, o.method_version, o.family, o.utterance_id, o.dataset, o.condition
  HAVING sum(o.ref_words) > 0
), pair AS (
  SELECT d.model_id, d.region, d.method_version, c.dataset AS clean_dataset, d.dataset AS degraded_dataset,
         d.condition, c.errors AS clean_errors, c.words AS clean_words, d.errors AS degraded_errors,
         d.words AS degraded_words, d.errors / d.words - c.errors / c.words AS delta
  FROM clip c
  JOIN clip d ON d.model_id = c.model_id AND d.region = c.region AND d.method_version = c.method_version
             AND d.family IS NOT DISTINCT FROM c.family AND d.utterance_id = c.utterance_id
  WHERE c.condition = 'clean' AND d.condition <> 'clean'
    AND (c.dataset IN (${dataset:sqlstring}) OR d.dataset IN (${dataset:sqlstring}))
)
SELECT
  model_id AS model, clean_dataset, degraded_dataset, condition, region, method_version AS method,
  count(*) AS pairs,
  {{pooled_wer(clean_errors, clean_words)}} AS clean_wer,
  {{pooled_wer(degraded_errors, degraded_words)}} AS degraded_wer,
  {{mean(delta)}} AS mean_delta,
  {{percentile(50, delta)}} AS median_delta,
  {{share(delta > 0)}} AS share_worse,
  {{share(delta < 0)}} AS share_better
FROM pair
GROUP BY model_id, clean_dataset, degraded_dataset, condition, region, method_version
ORDER BY model_id, clean_dataset, degraded_dataset, region, method_version

-- target: 4 A
-- Pooled WER at the agent's deadline (METHOD "WER at the deadline"): each streaming series' transcript as it
-- stood 0, 250, 500 and 1000 ms after the end of speech, pooled as the final's WER is over the ok rows scored
-- at the deadlines, with the series' pooled WER of the final beside it; each n/a under MIN_N scored clips.
SELECT
  o.model_id AS model, o.dataset, o.region, o.method_version AS method,
  count(o.errors_at_0ms) AS clips,
  {{pooled_wer(o.substitutions + o.deletions + o.insertions, o.ref_words)}} AS final_wer,
  {{wer_at_deadline(o.errors_at_0ms, o.ref_words)}} AS wer_at_0ms,
  {{wer_at_deadline(o.errors_at_250ms, o.ref_words)}} AS wer_at_250ms,
  {{wer_at_deadline(o.errors_at_500ms, o.ref_words)}} AS wer_at_500ms,
  {{wer_at_deadline(o.errors_at_1000ms, o.ref_words)}} AS wer_at_1000ms
FROM observations_during($__unixEpochFrom(), $__unixEpochTo()) o
WHERE {{chosen(o, 'stt')}}
  AND o.protocol = 'stt-stream'
  AND o.status = 'ok'
  AND o.ref_words IS NOT NULL
GROUP BY o.model_id, o.dataset, o.region, o.method_version
HAVING bool_or(o.errors_at_0ms IS NOT NULL)
ORDER BY o.model_id, o.dataset, o.region, o.method_version
