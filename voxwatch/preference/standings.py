"""The preference board's standings: stored ratings read into metrics' Ratings, every board fitted by
metrics' own functions (voxwatch/metrics/preference_bootstrap.py: board, by_group, by_rubric, by_category;
agreement; rubric_clusters), and laid out as one JSON snapshot that `preference fit` stores.

Nothing here defines a statistic: the Elo, its interval and the crossed interval beside it are
metrics', the CI-aware rank is metrics.ranking.interval_ranks, and a row's counts (its ratings,
raters and prompts) are counted from the very ratings its board was fitted on. The pages, the API
and `preference board` read the stored snapshot and never refit.

Which ratings: every rating of a non-gold pair (a gold pair checks the rater, it compares nothing),
less those of the raters in `exclude` - the caller passes the careless raters the gold pairs
caught (voxwatch.preference.gold.careless_raters, where it exists). The headline and the group,
configuration and category boards use the "overall" rubric; the rubric boards use each rubric.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from typing import Any, Collection

import numpy as np

from voxwatch.metrics import METHOD_VERSION
from voxwatch.metrics.preference import Ratings, ratings, regroup
from voxwatch.metrics.preference_bootstrap import RESAMPLES, SEED, Standings, by_category, by_group, by_rubric
from voxwatch.metrics.preference_engines import agreement
from voxwatch.metrics.ranking import interval_ranks
from voxwatch.metrics.rubric_clusters import rubric_clusters
from voxwatch.store.preference_fits import FitRow

from voxwatch.preference.standings_format import INTERVAL, ROW_FIELDS

HEADLINE_RUBRIC = "overall"
GROUPS = {"model": lambda m, t, v: m, "voice": lambda m, t, v: f"{m}|{v}", "thinking": lambda m, t, v: f"{m}|{t}"}
"""A configuration's group on each group board: a model over its voices and thinking levels, (model,
voice) over thinking levels, (model, thinking level) over voices."""
FACETS = ("category", "difficulty", "condition")
TITLES = {"model": "Models (voices and thinking levels pooled)", "config": "Configurations (model | thinking | voice)",
          "voice": "Per voice (model | voice, thinking levels pooled)",
          "thinking": "Per thinking level (model | thinking, voices pooled)"}
MIN_CLUSTER_RUBRICS = 3
MIN_CLUSTER_CONFIGS = 4
"""Rubric clustering needs rubrics to split and configurations left after the halo is taken out
(rows centred and one component removed: k configurations leave k - 2 dimensions)."""


def prompt_label(prompt_set: str, prompt_id: str) -> str:
    return f"{prompt_set}/{prompt_id}"


def config_parts(config_id: str) -> tuple[str, str, str]:
    """(model, thinking, voice) of `model|thinking|voice` (no registered id holds a '|')."""
    model, thinking, voice = config_id.rsplit("|", 2)
    return model, thinking, voice


@dataclass(frozen=True)
class StoredRatings:
    """Every rubric's ratings, and each prompt's category, difficulty and condition by its label."""
    ratings: Ratings
    facets: dict[str, dict[str, str]]
    excluded: int  # ratings of excluded raters left out


def read_ratings(store, exclude: Collection[int | str] = ()) -> StoredRatings:
    """The store's ratings of non-gold pairs as metrics Ratings, less the raters in `exclude` (ids)."""
    left_out = {str(x) for x in exclude}
    pairs = {p.pair_id: p for p in store.preference_pairs() if not p.gold}
    facets: dict[str, dict[str, str]] = {f: {} for f in FACETS}
    for p in store.preference_prompts():
        for f in FACETS:
            facets[f][prompt_label(p.prompt_set, p.prompt_id)] = getattr(p, f)
    found = [x for x in store.preference_ratings() if x.pair_id in pairs]
    kept = [x for x in found if str(x.rater_id) not in left_out]
    pair = [pairs[x.pair_id] for x in kept]
    r = ratings([str(x.rater_id) for x in kept], [prompt_label(p.prompt_set, p.prompt_id) for p in pair],
                [p.config_a for p in pair], [p.config_b for p in pair], [x.shown_first == "a" for x in kept],
                [x.cmos for x in kept], [x.rubric for x in kept])
    return StoredRatings(r, facets, len(found) - len(kept))


def _number(x: float) -> float | None:
    return float(x) if math.isfinite(float(x)) else None


def rows(b: Standings, r: Ratings) -> list[dict[str, Any]]:
    """A board's entries with ratings, best rank first (then Elo): each with its counts over `r`,
    the ratings the board was fitted on."""
    ranks = interval_ranks(b.low, b.high)
    out = []
    for i, name in enumerate(b.configs):
        involved = (r.a == i) | (r.b == i)
        if not involved.any():
            continue
        out.append({"rank": ranks[i], "name": name, "elo": _number(b.elo[i]), "low": _number(b.low[i]),
                    "high": _number(b.high[i]), "crossed_low": _number(b.crossed_low[i]),
                    "crossed_high": _number(b.crossed_high[i]), "missing": int(b.missing[i]),
                    "ratings": int(involved.sum()), "raters": int(np.unique(r.rater[involved]).size),
                    "prompts": int(np.unique(r.prompt[involved]).size)})
    return sorted(out, key=lambda x: (x["rank"] is None, x["rank"] or 0, -(x["elo"] or -math.inf), x["name"]))


def section(by: str, key: str, title: str, b: Standings, r: Ratings) -> dict[str, Any]:
    """One board of the snapshot; `r` the ratings it was fitted on (after regrouping, for a group)."""
    return {"by": by, "key": key, "title": title, "ratings": len(r), "raters": int(np.unique(r.rater).size),
            "prompts": int(np.unique(r.prompt).size), "resamples": b.resamples, "first": _number(b.first),
            "rows": rows(b, r)}


def _fittable(r: Ratings) -> bool:
    return len(r) > 0 and np.unique(np.concatenate([r.a, r.b])).size >= 2


def group_of(configs: tuple[str, ...], by: str) -> dict[str, str]:
    return {c: GROUPS[by](*config_parts(c)) for c in configs}


def clusters(r: Ratings, resamples: int, seed: int) -> tuple[dict[str, Any] | None, str | None]:
    """The rubric clustering (voxwatch/metrics/rubric_clusters.py) with splits = min(500, resamples), or why not."""
    rated = [name for i, name in enumerate(r.rubrics) if np.any(r.rubric == i)]
    if len(rated) < MIN_CLUSTER_RUBRICS:
        return None, f"rubric clustering needs ratings on at least {MIN_CLUSTER_RUBRICS} rubrics; {len(rated)} rated"
    every = set(range(len(r.configs)))
    for i in range(len(r.rubrics)):
        m = r.rubric == i
        if m.any():
            every &= set(np.concatenate([r.a[m], r.b[m]]).tolist())
    if len(every) < MIN_CLUSTER_CONFIGS:
        return None, (f"rubric clustering needs at least {MIN_CLUSTER_CONFIGS} configurations rated on every rubric; "
                      f"{len(every)} are")
    if len(r.raters) < 2:
        return None, "rubric clustering's split-half check needs at least 2 raters"
    c = rubric_clusters(r.subset(np.isin(r.rubric, [r.rubrics.index(x) for x in rated])), resamples=resamples,
                        splits=min(500, resamples), seed=seed)
    return {"rubrics": list(c.rubrics), "labels": list(c.labels), "reliability": c.reliability, "chance": c.chance,
            "split_half_ari": _number(c.split_half_ari), "structure": c.structure,
            "correlation": [[_number(x) for x in line] for line in c.correlation]}, None


def snapshot(stored: StoredRatings, resamples: int = RESAMPLES, seed: int = SEED) -> dict[str, Any]:
    """Every board of the stored ratings (JSON-ready): the headline model board first."""
    r = stored.ratings
    overall = r.of_rubric(HEADLINE_RUBRIC) if HEADLINE_RUBRIC in r.rubrics else r.subset(np.zeros(len(r), bool))
    doc: dict[str, Any] = {"method_version": METHOD_VERSION, "ratings": len(r), "raters": int(np.unique(r.rater).size),
                           "excluded_ratings": stored.excluded, "resamples": resamples, "seed": seed,
                           "interval": INTERVAL, "headline": "model", "sections": [], "engines": None,
                           "clusters": None, "clusters_reason": None}
    if not _fittable(overall):
        doc["clusters_reason"] = "no ratings yet"
        return doc
    sections = doc["sections"]
    rubric_boards = by_rubric(r, resamples, seed)  # the headline rubric's is the configuration board: fitted once
    for by in ("model", "config", "voice", "thinking"):
        if by == "config":
            sections.append(section(by, HEADLINE_RUBRIC, TITLES[by], rubric_boards[HEADLINE_RUBRIC], overall))
            continue
        groups = group_of(overall.configs, by)
        grouped = regroup(overall, groups)
        if _fittable(grouped):
            sections.append(section(by, HEADLINE_RUBRIC, TITLES[by], by_group(overall, groups, resamples, seed),
                                    grouped))
    for name, b in rubric_boards.items():
        sections.append(section("rubric", name, f"Rubric: {name}", b, r.of_rubric(name)))
    for facet in FACETS:
        label = np.array([stored.facets[facet][p] for p in overall.prompts])[overall.prompt]
        for value, b in by_category(overall, stored.facets[facet], resamples, seed).items():
            sections.append(section("category", f"{facet}={value}", f"{facet.capitalize()}: {value}", b,
                                    overall.subset(label == value)))
    doc["engines"] = {k: _number(v) for k, v in agreement(overall).spearman.items()}
    doc["clusters"], doc["clusters_reason"] = clusters(r, resamples, seed)
    return doc


def fit(store, exclude: Collection[int | str] = (), resamples: int = RESAMPLES, seed: int = SEED,
        now: float | None = None) -> FitRow:
    """Fit every board of the store's ratings and store the snapshot; returns the stored row."""
    stored = read_ratings(store, exclude)
    doc = snapshot(stored, resamples, seed)
    row = FitRow(None, time.time() if now is None else now, METHOD_VERSION, doc["ratings"], doc["raters"], resamples,
                 json.dumps(doc, allow_nan=False))
    store.add_preference_fit(row)
    return row
