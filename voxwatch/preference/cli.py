"""`voxwatch preference ...`: the human-preference board's data (docs/PREFERENCE.md).

prompts list|import, configs, generate, pairs, raters add|list, ratings export|import; fit and
standings (standings_cli.py). Fitting and ranking are metrics/'s; these commands make and keep the data they read.
"""

from __future__ import annotations

import argparse
import secrets
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Callable

from voxwatch.boards import listing
from voxwatch.config import Config
from voxwatch.providers.registry import Registry, RegistryError

from voxwatch.preference.standings_cli import FitError, register as register_board
from voxwatch.preference.pairs import PairSettings, PairsError, make_pairs
from voxwatch.preference.prompt_catalog import BUNDLED, PromptCatalog, UnknownPromptSet, bundled_root, import_prompt_set
from voxwatch.preference.ratings_io import FORMATS, dumps, export_records, format_of, import_file
from voxwatch.foundation.rubrics import RatingError

ConfigOf = Callable[[argparse.Namespace], Config]
ERRORS = (UnknownPromptSet, RatingError, PairsError, FitError)
"""The user errors of these commands besides those voxwatch.cli knows (a PromptSetError is a ManifestError)."""
RATE_PATH = "/rate/"


def catalog(cfg: Config) -> PromptCatalog:
    return PromptCatalog([bundled_root(), cfg.preference_prompts_dir])


def _store(cfg: Config, create: bool = True):
    from voxwatch.store import open_store

    return open_store(cfg.store_url, create=create)


def register(sub: argparse._SubParsersAction, config_of: ConfigOf) -> None:
    pf = sub.add_parser("preference", help="the human-preference board's prompts, outputs, pairs, raters and ratings")
    actions = pf.add_subparsers(dest="area", required=True)

    pr = actions.add_parser("prompts", help="prompt sets (bundled and imported)").add_subparsers(dest="action",
                                                                                                 required=True)
    pls = pr.add_parser("list", help="each set with its prompts, conditions and whether it is synthesized")
    listing.add_format(pls)
    pls.set_defaults(func=lambda a: cmd_prompts_list(a, config_of(a)))
    im = pr.add_parser("import", help="check a prompt set folder (promptset.json, prompts.jsonl, audio) and copy it "
                                      "into [preference] prompts_dir")
    im.add_argument("path", help="the prompt set folder")
    im.set_defaults(func=lambda a: cmd_prompts_import(a, config_of(a)))

    cf = actions.add_parser("configs", help="the registry's model configurations (model, thinking level, voice)")
    listing.add_format(cf)
    cf.set_defaults(func=lambda a: cmd_configs(a))

    gen = actions.add_parser("generate", help="answer every prompt of a set with every configuration and store "
                                              "the outputs (skips what is stored)")
    gen.add_argument("--configs", help="comma-separated configuration ids (default: every registered one; those "
                                       "without a key are skipped)")
    gen.add_argument("--prompts", default=BUNDLED, help=f"the prompt set (default: {BUNDLED})")
    gen.add_argument("--limit", type=int, help="only the set's first N prompts")
    gen.add_argument("--retry-failed", action="store_true", help="answer again the outputs stored as failed")
    gen.add_argument("--store", help="store URL (default: config)")
    gen.set_defaults(func=lambda a: cmd_generate(a, config_of(a)))

    pa = actions.add_parser("pairs", help="assign rating pairs over a set's stored outputs, gold pairs planted")
    pa.add_argument("--prompts", default=BUNDLED, help=f"the prompt set (default: {BUNDLED})")
    pa.add_argument("--per-prompt", type=int, help="pairs per prompt (default: half the configurations, rounded up, "
                                                   "so each is on every prompt)")
    pa.add_argument("--gold-share", type=float, default=0.1, help="share of gold pairs among all (default 0.1)")
    pa.add_argument("--seed", type=int, default=0, help="the assignment's seed (default 0)")
    pa.add_argument("--store", help="store URL (default: config)")
    pa.set_defaults(func=lambda a: cmd_pairs(a, config_of(a)))

    ra = actions.add_parser("raters", help="raters").add_subparsers(dest="action", required=True)
    add = ra.add_parser("add", help="make a rater and print their rating link (shown once; only its hash is kept)")
    add.add_argument("--label", default="", help="a name for the rater (optional)")
    add.add_argument("--store", help="store URL (default: config)")
    add.set_defaults(func=lambda a: cmd_raters_add(a, config_of(a)))
    ls = ra.add_parser("list", help="each rater with their ratings, gold answers passed, and whether that flags "
                                    "them careless ([preference] gold_pass_share, gold_min_answers)")
    ls.add_argument("--store", help="store URL (default: config)")
    listing.add_format(ls)
    ls.set_defaults(func=lambda a: cmd_raters_list(a, config_of(a)))

    rt = actions.add_parser("ratings", help="ratings as CSV or JSONL").add_subparsers(dest="action", required=True)
    ex = rt.add_parser("export", help="every rating, one a line")
    ex.add_argument("--format", choices=FORMATS, default="csv", help="csv (default) or jsonl")
    ex.add_argument("--output", type=Path, help="a file (default: standard output)")
    ex.add_argument("--store", help="store URL (default: config)")
    ex.set_defaults(func=lambda a: cmd_ratings_export(a, config_of(a)))
    ri = rt.add_parser("import", help="ratings from a CSV or JSONL file, all or none")
    ri.add_argument("path", type=Path, help="the ratings file")
    ri.add_argument("--format", choices=FORMATS, help="default: the file's extension")
    ri.add_argument("--store", help="store URL (default: config)")
    ri.set_defaults(func=lambda a: cmd_ratings_import(a, config_of(a)))

    register_board(actions, config_of)


PROMPT_COLUMNS = ("id", "category", "difficulty", "condition", "tags", "text")


def cmd_prompts_list(args: argparse.Namespace, cfg: Config) -> int:
    """Table: a heading and a table per set. CSV and JSON: one row per prompt, its set named in it."""
    every = []
    for entry in catalog(cfg).entries():
        ps = catalog(cfg).load(entry.name, verify=False)
        rows = [(p.id, p.category, p.difficulty, p.condition, ",".join(p.tags) or None, p.text) for p in ps.prompts]
        every += [(ps.name, ps.info.label, ps.pin, *row) for row in rows]
        if args.format == "table":
            print(f"{ps.name} [{ps.info.label}] {len(ps.prompts)} prompts, pin {ps.pin[:12]}, "
                  f"{'bundled' if entry.bundled else entry.folder}")
            listing.emit(PROMPT_COLUMNS, rows, "table", wide=args.wide)
            print()
    if args.format != "table":
        listing.emit(("set", "label", "pin", *PROMPT_COLUMNS), every, args.format)
    return 0


def cmd_prompts_import(args: argparse.Namespace, cfg: Config) -> int:
    done = import_prompt_set(Path(args.path), cfg.preference_prompts_dir, catalog(cfg))
    ps = done.prompt_set
    what = "is already in the catalog with these exact bytes" if done.unchanged else f"imported into {ps.folder}"
    print(f"{ps.name} [{ps.info.label}], {len(ps.prompts)} prompts, pin {ps.pin[:12]}: {what}")
    return 0


def cmd_configs(args: argparse.Namespace) -> int:
    registry = Registry.default()
    table = []
    for c in registry.preference_configs:
        model = registry.models[c.model]
        table.append((c.id, c.model, c.thinking, c.voice, "none needed" if not model.needs_key
                      else "set" if model.key_is_set() else "needed"))
    listing.emit(("configuration", "model", "thinking", "voice", "key"), table, args.format, wide=args.wide)
    return 0


def _configs(registry: Registry, given: str | None):
    known = {c.id: c for c in registry.preference_configs}
    if not given:
        return list(known.values())
    chosen = []
    for cid in (x.strip() for x in given.split(",") if x.strip()):
        if cid not in known:
            raise RegistryError(f"unknown configuration {cid!r}; `voxwatch preference configs` lists them")
        chosen.append(known[cid])
    return chosen


def cmd_generate(args: argparse.Namespace, cfg: Config) -> int:
    from dataclasses import replace

    from voxwatch.preference.generate import GenerateSettings, generate

    registry = Registry.default()
    configs = _configs(registry, args.configs)
    ps = catalog(cfg).load(args.prompts)
    if args.limit is not None:
        if args.limit < 1:
            raise PairsError("--limit must be at least 1")
        ps = replace(ps, prompts=ps.prompts[: args.limit])
    print(f"{ps.name} [{ps.info.label}]: {len(ps.prompts)} prompts x {len(configs)} configurations")
    store = _store(cfg)
    try:
        done = generate(store, registry, ps, configs, GenerateSettings(cfg.preference_outputs_dir, cfg.chunk_ms,
                                                                      cfg.timeout_s, args.retry_failed))
    finally:
        store.close()
    print(f"stored {done.stored} outputs, {done.failed} failed (stored with their reason), {done.skipped} already "
          f"stored" + (f"; skipped for want of a key: {', '.join(done.no_key)}" if done.no_key else ""))
    return 1 if done.failed and not done.stored else 0


def cmd_pairs(args: argparse.Namespace, cfg: Config) -> int:
    store = _store(cfg)
    try:
        per_prompt = args.per_prompt
        if per_prompt is None:
            configs = {o.config_id for o in store.preference_outputs(args.prompts) if o.status == "ok"}
            per_prompt = max(1, -(-len(configs) // 2))
        rows = make_pairs(store, args.prompts, PairSettings(per_prompt, args.gold_share, args.seed),
                          cfg.preference_outputs_dir)
    finally:
        store.close()
    gold = sum(1 for r in rows if r.gold)
    print(f"stored {len(rows)} pairs ({gold} gold) of design {rows[0].design}")
    return 0


def cmd_raters_add(args: argparse.Namespace, cfg: Config) -> int:
    token = secrets.token_urlsafe(24)
    store = _store(cfg)
    try:
        rater = store.add_rater(token, time.time(), args.label)
    finally:
        store.close()
    print(f"rater {rater.rater_id}{f' ({rater.label})' if rater.label else ''}: {RATE_PATH}{token}")
    print("the link is shown this once: only its sha256 is stored")
    return 0


def cmd_raters_list(args: argparse.Namespace, cfg: Config) -> int:
    from voxwatch.preference.gold import gold_scores

    store = _store(cfg, create=False)
    try:
        raters, ratings, pairs = store.preference_raters(), store.preference_ratings(), store.preference_pairs()
    finally:
        store.close()
    scores = gold_scores(pairs, ratings, [r.rater_id for r in raters], cfg.preference_gold_pass_share,
                         cfg.preference_gold_min_answers)
    answered = Counter(x.rater_id for x in ratings)
    pairs_rated = Counter(rater_id for rater_id, _ in {(x.rater_id, x.pair_id) for x in ratings})
    table = []
    for r in raters:
        s = scores[r.rater_id]
        verdict = ("yes" if s.careless else "no") if s.answered >= cfg.preference_gold_min_answers else "too few gold"
        table.append((r.rater_id, r.label or None, pairs_rated[r.rater_id], answered[r.rater_id], s.answered,
                      s.passed, verdict))
    listing.emit(("rater", "label", "pairs", "ratings", "gold", "passed", "careless"), table, args.format,
                 wide=args.wide)
    if args.format != "table":
        return 0
    print(f"careless: below {cfg.preference_gold_pass_share:g} of at least {cfg.preference_gold_min_answers} gold "
          "answers passed; the Elo fit leaves their ratings out")
    return 0


def cmd_ratings_export(args: argparse.Namespace, cfg: Config) -> int:
    store = _store(cfg, create=False)
    try:
        text = dumps(export_records(store), args.format)
    finally:
        store.close()
    if args.output:
        args.output.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


def cmd_ratings_import(args: argparse.Namespace, cfg: Config) -> int:
    format_of(args.path, args.format)
    store = _store(cfg)
    try:
        added, already = import_file(store, args.path, args.format)
    finally:
        store.close()
    print(f"imported {added} ratings ({already} already stored)")
    return 0
