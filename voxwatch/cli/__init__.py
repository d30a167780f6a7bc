"""The `voxwatch` command: run a tick, read the leaderboard, export rows, manage datasets and scenarios.

Exit codes: 0 done; 1 a run in which every row failed (or no model to measure, none skipped), a
webhook not delivered; 2 a bad request (an unknown id, a bad option, config, file or store, an
unreachable URL), said in one line on stderr; 3 rows measured that neither the store nor any spool
folder would take (counted, and every folder named, in one line); 130 interrupted; 143 terminated
(SIGTERM: `run` and the imports stop as on Ctrl-C, an import's staging folder removed); 141 (128 +
SIGPIPE, as a shell reports a tool the pipe closed on) its reader closed standard output early, e.g.
`voxwatch export | head`.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import os
import signal
import sys
from contextlib import closing
from dataclasses import asdict, replace
from pathlib import Path

from voxwatch import config as config_mod
from voxwatch.boards import comparisons as board_comparisons
from voxwatch.boards import compare_refresh, filter_matches, kept_off, leaderboard, listing, run_board
from voxwatch.metrics import METHOD_VERSION
from voxwatch.metrics.family_lines import BOARD as FAMILY_BOARD
from voxwatch.foundation.audio import AudioError
from voxwatch.datasets.download import FetchError
from voxwatch.datasets.catalog import Catalog, IntegrityError, UnknownDataset, bundled_root
from voxwatch.datasets.degrade import TRANSFORMS
from voxwatch.datasets.importer import DatasetImportError, degrade_names, import_dataset
from voxwatch.datasets.manifest import ManifestError
from voxwatch.foundation.observation import FIELDS
from voxwatch.providers.keys import key_variable
from voxwatch.providers.local.whisper_stt import ModelIntegrityError
from voxwatch.providers.lifecycle import CHECK_MAX_AGE_DAYS, WARNING_DAYS
from voxwatch.providers.registry import PACKAGE, ModelInfo, Registry, RegistryError
from voxwatch.preference.cli import ERRORS as PREFERENCE_ERRORS
from voxwatch.conversations.cli import ERRORS as SCENARIO_ERRORS, register as register_scenarios
from voxwatch.cli.progress import Progress, add_progress, wanted
from voxwatch.boards.row_options import add_row_filters, row_filter, span_text
from voxwatch.store import RowFilter, open_store, redact
from voxwatch.store import demo as demo_store
from voxwatch.store.partitions import parse_month
from voxwatch.foundation.store_url import StoreError
from voxwatch.web.limits import Limits
from voxwatch.store.spool import RowsFileError, Unkept, add_spooled, read_spool
from voxwatch.foundation.store_url import SQLITE, store_kind
from voxwatch.boards.listing import aligned
from voxwatch.foundation.text import one_line
from voxwatch.foundation.termination import EXIT_CODE as TERMINATED, Terminated, raise_terminated
from voxwatch.harness.tick import PlanError, plan_tick, resolve_instrument, run_tick

USER_ERRORS = (config_mod.ConfigError, RegistryError, ManifestError, IntegrityError, AudioError, StoreError,
               UnknownDataset, DatasetImportError, FetchError, ModelIntegrityError, PlanError, RowsFileError) + SCENARIO_ERRORS \
    + PREFERENCE_ERRORS


def _names(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


def _config(args) -> config_mod.Config:
    cfg = config_mod.load(args.config)
    if getattr(args, "store", None):
        cfg = cfg.with_store(args.store)
    return cfg


def _catalog(cfg: config_mod.Config) -> Catalog:
    return Catalog([bundled_root(), cfg.datasets_dir])


def _languages(cfg: config_mod.Config, rows) -> dict[str, str | None]:
    """Each dataset's language, from this machine's catalog (None for one it lacks), for board headings."""
    from voxwatch.datasets.provenance import lookup

    catalog = _catalog(cfg)
    return {d: lookup(catalog, d).language for d in {r.dataset for r in rows}}


def cmd_run(args) -> int:
    signal.signal(signal.SIGTERM, raise_terminated)
    cfg = _config(args)
    demo_store.refuse_measuring(cfg.store_url)  # real measurements never join a demo store's emulated rows
    registry = Registry.default(files=cfg.registry_files)
    models = _names(args.models) if args.models else None
    if models is None and args.board:  # one board: its configured models only
        models = list(cfg.boards[args.board].models)
    # one tick in-process, with no alert evaluating it: the sentinel panel serves the distributed
    # alerts (docs/ALERTS.md), so a run measures its draw alone
    plan = plan_tick(cfg, registry, _catalog(cfg), models=models, datasets=_names(args.datasets) if args.datasets else None,
                     sample_size=args.sample_size, seed=args.seed, panel_size=0)
    if args.board:
        _on_board(plan, registry, args.board)
    talks = None
    if args.board in (None, "s2s") and not args.models and not args.datasets:  # those: exactly what they name
        from voxwatch.conversations.tick import plan_conversations  # when needed: the runner, the engines

        talks = plan_conversations(cfg, registry, turns=args.conversation_turns)
    for line in plan.skipped + plan.warnings + (talks.skipped + talks.warnings if talks else []):
        print(line)
    holding = talks is not None and bool(talks.models and talks.scenarios)
    if not plan.tasks and not holding:
        print("nothing to measure: no runnable model on the chosen boards")
        return 1 if not plan.skipped and not (talks and talks.skipped) else 0
    store = open_store(cfg.store_url)
    code = 0
    try:
        if plan.tasks:
            code = _run_tick(args, cfg, store, registry, plan)
        if holding:
            code = code or (1 if _hold_conversations(cfg, store, registry, talks) else 0)
        if plan.tasks:
            _refresh_views(store, registry)
    finally:
        store.close()
    return code


def _refresh_views(store, registry: Registry | None) -> None:
    """The comparison pages' kept views after new rows (a store that keeps them: Postgres); a failure
    leaves the rows stored and says so, the next tick or `voxwatch db refresh` recomputes them."""
    try:
        compare_refresh.request(store, registry)
    except StoreError as exc:
        print(f"the comparison pages' views were not refreshed: {exc}", file=sys.stderr)


def _on_board(plan, registry: Registry, board: str) -> None:
    """--board with --models: every model must be on that board."""
    for model in {t.model.id: t.model for t in plan.tasks}.values():
        if model.board != board:
            raise PlanError(f"{model.id} is on the {model.board} board, not {board} (--board {board})")


def _run_tick(args, cfg: config_mod.Config, store, registry: Registry, plan) -> int:
    """Measure the plan's single-turn rows, print the run and the leaderboard; the exit code: UNKEPT
    when rows could be neither stored nor spooled, 1 if every row failed, else 0."""
    instrument, instrument_id = resolve_instrument(cfg, registry, plan)
    result = run_tick(cfg, store, registry, plan, progress=wanted(args),
                      instrument=instrument, instrument_id=instrument_id)
    if result.spooled is not None:
        print(f"warning: the store refused some rows; they are safe in {result.spooled} (added by `voxwatch runs "
              f"reconcile` once the store answers, or: voxwatch ingest {result.spooled})", file=sys.stderr)
    if result.unkept is not None:  # the store is down and every spool folder full: say so, and leave it there
        print(f"run {result.run.run_id} {result.run.status}: {result.run.rows} observations kept, "
              f"store {redact(cfg.store_url)}")
        print(f"voxwatch: error: run {result.run.run_id}: {one_line(str(result.unkept))}", file=sys.stderr)
        return UNKEPT
    failed = [r for r in result.rows if r.status != "ok"]
    print(f"run {result.run.run_id} {result.run.status}: {len(result.rows)} observations "
          f"({len(failed)} not ok), seed {plan.seed}, store {redact(cfg.store_url)}")
    for r in failed[:10]:
        print(f"  {r.status}: {r.model_id} {r.dataset}/{r.clip_id}: {r.reason}")
    if kept := kept_off.run_line(result.rows):
        print(kept)
    print()
    try:  # the rankings this run measured; the rest are `voxwatch leaderboard`'s
        rows, others = run_board.measured(leaderboard.from_store(store, "30d", registry), result.rows)
        emulated = {} if rows else store.emulated(RowFilter(since=leaderboard.since("30d"),
                                                            models=tuple({r.model_id for r in result.rows})))
        measured = RowFilter(boards=tuple({r.board for r in result.rows}), datasets=tuple({r.dataset for r in result.rows}))
        compared = board_comparisons.from_store(store, "30d", measured)  # the printed rankings' pairs only
        stalled = store.stalled(RowFilter(since=leaderboard.since("30d"), models=tuple({r.model_id for r in result.rows})))
        print(leaderboard.format_table(rows, "30d", registry, comparisons=compared, languages=_languages(cfg, rows),
                                       width=_width(args), emulated=emulated, stalled=stalled))
        if hint := run_board.others_line(others, "30d"):
            print(f"\n{hint}")
    except StoreError as exc:
        if result.spooled is None:
            raise
        print(f"no leaderboard: {one_line(str(exc))}")  # the store is away; the run's rows are safe in the spool
    if result.run.status == "failed":  # every row not ok: the run record says so, and so does the exit code
        print(f"voxwatch: every one of the {len(result.rows)} observations failed (run {result.run.run_id})",
              file=sys.stderr)
        return 1
    return 0


def _hold_conversations(cfg: config_mod.Config, store, registry: Registry, talks) -> bool:
    """Hold and store the S2S board's conversations, print each and the board from the store; True
    if every turn failed."""
    from voxwatch.conversations.scorecards import store_scorecards_text, turns_table
    from voxwatch.conversations.tick import hold_conversations
    from voxwatch.conversations.runner import summary_line

    trial = f"the first {talks.turns} turns of " if talks.turns else ""
    personas = cfg.boards["s2s"].personas
    print(f"\nholding {len(talks.models) * len(talks.scenarios) * len(personas)} conversation(s): {trial}"
          f"{', '.join(s.identity for s in talks.scenarios)} with {', '.join(m.id for m in talks.models)}, "
          f"persona {', '.join(personas)}")

    def show(held) -> None:
        print(summary_line(held))
        print(turns_table(held))

    result = hold_conversations(cfg, store, registry, talks, on_conversation=show)
    for line in result.skipped[len(talks.skipped):]:
        print(line)
    for path in result.spooled:
        print(f"warning: the store refused a conversation; it is safe in {path} (added by `voxwatch runs reconcile`, "
              f"or: voxwatch ingest {path})", file=sys.stderr)
    print(f"\nrun {result.run.run_id} {result.run.status}: {len(result.conversations)} conversation(s) stored, "
          f"{result.run.rows} turns ({result.run.failed_rows} failed), store {redact(cfg.store_url)}\n")
    board = store_scorecards_text(store, leaderboard.since("30d"), registry=registry)
    print(f"S2S conversations - rolling 30d\n{board}" if board else "No conversations in the last 30d.")
    emulated = sum(row.emulator for row, _ in result.conversations)
    if emulated:  # a loopback server's numbers are never a board's (an emulator, or an agent on this machine)
        print(f"{emulated} conversation(s) held against a loopback address are stored but kept off the board; "
              "`voxwatch scenarios run` prints such a conversation's own board")
    return result.run.status == "failed"


def _check_filters(store, cfg: config_mod.Config, only: RowFilter, window: str | None) -> None:
    """A --model or --dataset that matches nothing stored is refused (exit 2) with the ids it likely
    meant; `window` is the reader's rolling window (None: the whole store)."""
    if only.models or only.datasets:
        where = span_text(only, window or "") if only.since is not None or only.until is not None else None
        filter_matches.check(only, filter_matches.stored(store, window, only),
                             Registry.default(files=cfg.registry_files).models, _catalog(cfg).names(),
                             where or (f"in the last {window}" if window else ""))


def cmd_leaderboard(args) -> int:
    cfg = _config(args)
    only = row_filter(args)
    ranked = replace(only, models=())  # a model's rank is its place among every model of its board
    registry = Registry.default(files=cfg.registry_files)
    if args.format == "json":
        with closing(open_store(cfg.store_url, create=False)) as store:
            _check_filters(store, cfg, only, args.window)
        return _leaderboard_json(args, cfg, registry, only)
    store = open_store(cfg.store_url, create=False)
    board = None
    try:
        _check_filters(store, cfg, only, args.window)
        rows = leaderboard.from_store(store, args.window, registry, ranked)
        start = leaderboard.since(args.window) if only.since is None else only.since
        emulated = store.emulated(replace(only, since=start)) if args.format == "table" else {}
        stalled = store.stalled(replace(only, since=start)) if args.format == "table" else {}
        compared = board_comparisons.from_store(store, args.window, ranked) if args.format == "table" else []
        if args.format == "table" and (not only.boards or "s2s" in only.boards) and not only.datasets:
            from voxwatch.conversations.scorecards import store_scorecards_text

            board = store_scorecards_text(store, start, only.until, only.models, registry)
    finally:
        store.close()
    span = span_text(only, args.window)
    if args.format == "table":
        _say_watermark(cfg)
        series = any(not only.models or r.model_id in only.models for r in rows)
        # conversations are measurements too: never "No observations" above them (but a model's emulated rows, said)
        if board is None or series or any(emulated.get(m) for m in only.models):
            print(leaderboard.format_table(rows, args.window, registry, comparisons=compared, span=span,
                                           models=only.models, languages=_languages(cfg, rows), width=_width(args),
                                           emulated=emulated, stalled=stalled))
        if board is not None:
            print(f"{chr(10) if series else ''}S2S conversations - {span or 'rolling ' + args.window}\n{board}")
    else:
        sys.stdout.write(leaderboard.format_csv([r for r in rows if only.keeps(r)], registry))
    return 0


DEMO_TICKS, DEMO_SAMPLE = 4, 4
"""`voxwatch demo`'s defaults: 4 ticks of 4 items per dataset, 16 values a series (a newcomer's minutes)."""


def _say_watermark(cfg: config_mod.Config) -> None:
    """A demo store's watermark above any table read from it (voxwatch.store.demo)."""
    if demo_store.note(cfg.store_url) is not None:
        print(listing.prose(demo_store.WATERMARK, listing.WIDTH) + "\n")


def cmd_demo(args) -> int:
    """Fill the demo store from the loopback emulators, print its boards, and serve it when asked."""
    from voxwatch.cli import demo

    url, args.store = args.store or demo_store.DEFAULT_URL, None  # the configured store is the one never written
    cfg = _config(args)
    if url == cfg.store_url and demo_store.note(url) is None:
        raise config_mod.ConfigError(f"--store {redact(url)} is the configured store: the demo fills a store of its "
                                     f"own (default {demo_store.DEFAULT_URL})")
    registry = Registry.default(files=cfg.registry_files)
    if not args.keep:
        demo_store.reset(url)
    result = demo.fill(cfg, registry, _catalog(cfg), url, args.ticks, args.sample_size, args.conversation_turns)
    print(f"demo store {redact(url)}: {result.rows} emulated observations and {result.conversations} conversation(s) "
          f"of {len(result.models)} models over {result.ticks} ticks\n")
    demo_cfg = replace(cfg, store_url=url)
    _say_watermark(demo_cfg)
    with closing(open_store(url, create=False)) as store:
        rows = leaderboard.from_store(store, "30d", registry)
        print(leaderboard.format_table(rows, "30d", registry, comparisons=board_comparisons.from_store(store, "30d"),
                                       languages=_languages(cfg, rows), width=_width(args)))
    if args.serve:
        from voxwatch.web.app import serve

        print(f"\nserving the demo store on http://{args.host}:{args.port}/ (every page watermarked as emulated data)")
        return serve(url, args.host, args.port)
    print(f"\nsee every page: voxwatch serve --store {redact(url)}")
    return 0


def _width(args) -> int | None:
    """The width a command's text is fitted to: the default's, or none with --wide (every column whole)."""
    return None if args.wide else listing.WIDTH


def _leaderboard_json(args, cfg: config_mod.Config, registry: Registry, only: RowFilter) -> int:
    """The API's document (/api/v1/leaderboard), ranks and method notes included; over a span of
    the user's, its rows are the span's (computed as `from_store` does), and it says the span."""
    from voxwatch.web.source import StoreUnavailable, open_source
    from voxwatch.web.views import leaderboard_document

    span = compared = None
    if only.since is not None or only.until is not None or only.by_clip:  # the span's (or clips') rows, every model's
        store = open_store(cfg.store_url, create=False)
        try:
            span = leaderboard.from_store(store, args.window, registry, replace(only, models=()))
            compared = board_comparisons.from_store(store, args.window, only)
        finally:
            store.close()
    source = open_source(cfg.store_url, registry)
    try:
        doc = leaderboard_document(source, registry, args.window, None, None, span, comparisons=compared)
    except StoreUnavailable as exc:
        print(f"voxwatch: error: {one_line(exc.detail)}", file=sys.stderr)
        return 2
    finally:
        source.close()
    doc["rows"] = [r for r in doc["rows"] if only.keeps(argparse.Namespace(**r))]
    doc["comparisons"] = [c for c in doc["comparisons"] if (not only.boards or c["board"] in only.boards)
                          and (not only.datasets or c["dataset"] in only.datasets)
                          and (not only.models or c["model_a"] in only.models or c["model_b"] in only.models)]
    doc["notes"] = [n for n in doc["notes"] if (not only.models or n["model_id"] in only.models)
                    and (not only.datasets or n["dataset"] in only.datasets)]
    if only != RowFilter():  # filtered: the document says how; unfiltered, it is the API's own
        doc.update(since=only.since, until=only.until, boards=list(only.boards), datasets=list(only.datasets),
                   models=list(only.models), speakers=list(only.speakers), accents=list(only.accents))
    if demo_store.note(cfg.store_url) is not None:
        doc = {"watermark": demo_store.WATERMARK, **doc}
    print(json.dumps(doc, indent=2))
    return 0


def cmd_compare(args) -> int:
    """The paired comparisons the ranks come from: every two models of a ranking on the clips both heard."""
    cfg = _config(args)
    only = row_filter(args)
    store = open_store(cfg.store_url, create=False)
    try:
        _check_filters(store, cfg, only, args.window)
        found = board_comparisons.involving(board_comparisons.from_store(store, args.window, only), only.models)
    finally:
        store.close()
    if args.format == "csv":
        sys.stdout.write(board_comparisons.format_csv(found))
    elif args.format == "json":
        print(json.dumps({"window": args.window, "method_version": METHOD_VERSION, "about": board_comparisons.ABOUT,
                          "comparisons": board_comparisons.published(found)}, indent=2))
    else:
        span = span_text(only, args.window)
        _say_watermark(cfg)
        print(f"Paired comparisons - {span or 'rolling ' + args.window}, method v{METHOD_VERSION}\n")
        print(board_comparisons.format_table(found, _width(args)))
    return 0


def cmd_export(args) -> int:
    cfg = _config(args)
    only = row_filter(args)
    if args.what != "observations":
        return _export_conversations(args, cfg, only)
    store = open_store(cfg.store_url, create=False)
    try:
        _check_filters(store, cfg, only, None)  # a --model or --dataset that matches nothing: refused before a byte
        out = open(args.out, "w", newline="", encoding="utf-8") if args.out else sys.stdout
    except OSError as exc:
        store.close()
        raise config_mod.ConfigError(f"--out {args.out}: cannot write ({exc.strerror})") from None
    except BaseException:
        store.close()
        raise
    count = 0
    try:
        if args.format == "csv":
            writer = csv.DictWriter(out, fieldnames=FIELDS, lineterminator="\n")
            writer.writeheader()
        with Progress("exporting", "row", wanted(args)) as bar:
            demo = demo_store.note(cfg.store_url) is not None  # a demo store's rows leave it as an emulator's
            for row in store.observations(only=only):
                row = replace(row, emulator=True) if demo else row
                if args.format == "csv":
                    writer.writerow(asdict(row))
                else:
                    out.write(json.dumps(asdict(row), sort_keys=True) + "\n")
                count += 1
                bar.advance()
    finally:
        store.close()
        if args.out:
            out.close()
    if args.out:
        print(f"wrote {count} observations to {args.out}")
    return 0


def _export_conversations(args, cfg: config_mod.Config, only: RowFilter) -> int:
    """`export --what conversations|turns` (voxwatch/conversations/export.py): --model, --since and --until
    select; the observations' filters (--board, --dataset, --speaker, --accent) are refused, not ignored."""
    from voxwatch.conversations import export as conversation_export

    given = [flag for flag, value in (("--board", only.boards), ("--dataset", only.datasets),
                                      ("--speaker", only.speakers), ("--accent", only.accents)) if value]
    if given:
        raise config_mod.ConfigError(f"{', '.join(given)}: filters of observations; --what {args.what} takes "
                                     "--model, --since and --until")
    unit = conversation_export.UNIT[args.what]
    with closing(open_store(cfg.store_url, create=False)) as store:
        stored = store.conversations(since=only.since)
    missing = sorted(set(only.models) - {row.model_id for row, _ in stored})
    if missing:  # a mistyped id: refused before a byte, as the observations' filters are
        raise config_mod.ConfigError(f"--model: no stored conversation of {', '.join(missing)}"
                                     + (" in that span" if only.since is not None else ""))
    found = conversation_export.chosen(stored, only.models, only.until)
    if demo_store.note(cfg.store_url) is not None:
        found = conversation_export.as_emulated(found)
    try:
        out = open(args.out, "w", newline="", encoding="utf-8") if args.out else sys.stdout
    except OSError as exc:
        raise config_mod.ConfigError(f"--out {args.out}: cannot write ({exc.strerror})") from None
    try:
        with Progress("exporting", unit, wanted(args)) as bar:
            count = conversation_export.write(found, args.what, args.format, out, bar.advance)
    finally:
        if args.out:
            out.close()
    if args.out:
        print(f"wrote {count} {unit}s to {args.out}")
    return 0


def cmd_ingest(args) -> int:
    """All or nothing: every line is checked before the store is opened (store.spool.read_spool)."""
    cfg = _config(args)
    with Progress("checking", "line", wanted(args)) as bar:
        rows, conversations = read_spool(Path(args.file), bar)
    store = open_store(cfg.store_url)
    try:
        with Progress("storing", "file", wanted(args), total=1) as bar:  # one transaction: all at once
            added = add_spooled(store, rows, conversations)
            bar.advance()
        if hasattr(store, "refresh_comparisons"):  # Postgres keeps them in tables, refreshed per batch of ticks
            store.refresh_comparisons({r.dataset for r in rows})
            store.refresh_families({r.family for r in rows if r.board == FAMILY_BOARD and r.family and r.utterance_id})
            _refresh_views(store, Registry.default(files=cfg.registry_files))
    finally:
        store.close()
    also = f" and {len(conversations)} conversations" if conversations else ""
    print(f"read {len(rows)} observations{also} from {args.file}; {added} were new")
    return 0


def cmd_providers_list(args) -> int:
    """Every id with its board, status on the day (retired, or retiring soon), key, list price, and when and
    where it was last checked against its vendor; then each entry's source, the prices' sources, the
    exclusions and the vendors' versioning statements."""
    registry = Registry.default(files=_config(args).registry_files)
    models = sorted(registry.models.values(), key=lambda m: (m.board, m.id))
    header = ("id", "board", "protocol", "status", "key", "checked", "deprecated", "shutdown", "successor",
              "session limit", "price", "price checked", "source file", *PRICE_DATA, "source")
    table, short = [], []  # short: the fitted table's rows, each key named only by its state (the legend's pattern)
    for m in models:
        state = "not needed" if not m.needs_key else ("set" if m.key_is_set() else "unset")
        key = f"unset ({key_variable(m.vendor)})" if state == "unset" else state
        table.append((m.id, m.board, m.protocol, registry.standing(m).label, key, str(m.checked),
                      m.deprecated and str(m.deprecated), m.shutdown and str(m.shutdown), m.successor,
                      f"{m.session_limit_s} s" if m.session_limit_s else
                      ("not documented" if m.session_limit_unknown else None), price_cell(m, registry.day),
                      m.price and str(m.price.checked), _origin(m.origin), *price_data(m, registry.day), m.source or ""))
        short.append(tuple(state if c == "key" else v for c, v in zip(header, table[-1])))
    if args.format != "table":  # the rows only; their sources are columns
        listing.emit(header, table, args.format, wide=args.wide)
        return 0
    print(f"statuses on {registry.day} (a model is retired from its shutdown date and warned about in the "
          f"{WARNING_DAYS} days before)\n{PRICE_LEGEND}; stale: checked over {CHECK_MAX_AGE_DAYS} days ago")
    width = _width(args)
    if width is None:
        shown = [i for i, c in enumerate(header) if c not in (*PRICE_DATA, "source")]
    else:
        shown, table = [header.index(c) for c in PROVIDER_COLUMNS], short
        print("key: set, not needed, or unset (then set VOXWATCH_<VENDOR>_API_KEY; --wide names each)")
    print()
    cells = [tuple(listing.text(row[i]) for i in shown) for row in [header, *table]]
    print("\n".join(listing.fitted(cells, width, flexible=range(1, len(shown)))))  # an id is never cut
    print("\nchecked against:")
    print("\n".join(aligned([(f"  {m.id}", m.source or "") for m in models], width)))
    priced = [m for m in models if m.price]
    if priced:
        print(f"\nlist prices ({len(priced)} of {len(models)} models; read on, from):")
        print("\n".join(aligned([(f"  {m.id}", str(m.price.checked), m.price.source) for m in priced], width)))
    exclusions = [(f"  {m.id}", e.metric, e.reason) for m in models for e in m.exclusions]
    if exclusions:
        print("\nexclusions (shown as n/a with the reason):")
        print("\n".join(aligned(exclusions, width)))
    print("\nvendors (how each versions its models):")
    print("\n".join(aligned([(f"  {v.name}", v.snapshots + (f" ({v.pattern})" if v.pattern else ""),
                               f"checked {v.checked}", v.source + (f"; {v.note}" if v.note else ""))
                              for v in sorted(registry.vendors.values(), key=lambda v: v.name)], width)))
    servers = [v for v in sorted(registry.vendors.values(), key=lambda v: v.name) if v.speaks or v.origin != PACKAGE]
    if servers:
        print("\nvendors from your registry files (source file, protocol family, server, key):")
        print("\n".join(aligned([(f"  {v.name}", _origin(v.origin), v.speaks or "-", v.base_url or "-",
                                   "none" if v.key_env == "" else key_variable(v.name)) for v in servers], width)))
    return 0


PROVIDER_COLUMNS = ("id", "protocol", "status", "key", "successor", "session limit", "price")
"""The registry table's columns fitted to a terminal: what choosing a model to run needs (its status says a
retirement's date; the protocol names the board); `--wide` adds the board, the check, deprecation and
shutdown dates, the price's check date and the source file."""
PRICE_DATA = ("price usd", "price output usd", "price unit", "price stale", "price source")
"""The list price as a program reads it (CSV, JSON): the table's `price` cell says it, its source is listed below."""
PRICE_LEGEND = "price: the vendor's list price, USD per minute or hour of audio (S2S: in, out), 1M characters or 1M audio tokens"
LOCAL_PRICE = "none: local"
"""The price cell of a local engine or the local cascade: there is no list price to pay."""


def price_cell(model: ModelInfo, day: dt.date) -> str | None:
    """A model's list price as its vendor states it, "(stale)" when checked too long ago; for a local model
    the reason it has none; None (shown "-") where no price was found (the registry's header says why)."""
    if model.price is None:
        return LOCAL_PRICE if model.region == "local" else None
    return model.price.short_text() + (" (stale)" if model.price_stale(day) else "")


def price_data(model: ModelInfo, day: dt.date) -> tuple:
    """PRICE_DATA's cells of a model: all None where it has no price."""
    p = model.price
    if p is None:
        return (None,) * len(PRICE_DATA)
    return p.usd, p.output_usd, p.unit, model.price_stale(day), p.source


def _origin(origin: str) -> str:
    """Where a registry entry came from: the package's registry.toml, or the user file's path."""
    return f"{PACKAGE} (package)" if origin == PACKAGE else origin


def cmd_datasets_list(args) -> int:
    from voxwatch.datasets.provenance import describe

    cfg = _config(args)
    catalog = _catalog(cfg)
    table = []
    for name in catalog.names():
        ds = catalog.load(name, verify=False)
        minutes = round(ds.duration_s / 60, 1) if ds.info.kind == "audio" else None
        table.append((name, ds.info.kind, ds.info.family, ds.info.condition, ds.info.language, len(ds.items), minutes,
                      describe(ds.info).origin, ds.info.description))
    listing.emit(("name", "kind", "family", "condition", "language", "items", "minutes", "origin", "description"),
                 table, args.format, wide=args.wide)
    return 0


def cmd_datasets_import(args) -> int:
    cfg = _config(args)
    degrade = degrade_names(args.degrade) if args.degrade else ()
    done = import_dataset(Path(args.dir), args.name, cfg.datasets_dir, _catalog(cfg).names(),
                          allow_truncated=args.allow_truncated, degrade=degrade, language=args.language)
    minutes = sum(c.duration_s for c in done.clips) / 60
    print(f"imported {len(done.clips)} clips ({minutes:.1f} min) as {args.name} into {done.folder}")
    _print_entities(done.clips, "clips")
    if len(done.members) > 1:
        print(f"family {args.name}: " + ", ".join(f"{m.folder.name} ({m.condition}, {m.clips} clips)"
                                                  for m in done.members))
    if done.truncated:
        print(f"warning: {len(done.truncated)} clip(s) were shorter than their headers say and were imported as they "
              f"are (--allow-truncated; recorded in dataset.json): {', '.join(done.truncated)}")
    print(f"measure it with: voxwatch run --datasets {','.join(m.folder.name for m in done.members)}")
    return 0


def _print_entities(items, what: str) -> None:
    """How many entities an import's items carry: the error rate a board can show for them."""
    tagged = [i for i in items if i.entities]
    print(f"entities: {sum(len(i.entities) for i in tagged)} in {len(tagged)} {what} (their own tags, else the "
          "entity tagger's; docs/METHOD.md \"Tagging\")")


def cmd_datasets_import_text(args) -> int:
    from voxwatch.datasets.text_import import import_text

    cfg = _config(args)
    done = import_text(Path(args.file), args.name, cfg.datasets_dir, _catalog(cfg).names())
    print(f"imported {len(done.prompts)} prompts as {args.name} into {done.folder}")
    _print_entities(done.prompts, "prompts")
    print(f"measure it with: voxwatch run --board tts --datasets {args.name}")
    return 0


def cmd_datasets_fetch(args) -> int:
    from voxwatch.datasets import remote
    from voxwatch.datasets.download import Limits
    from voxwatch.datasets.fetch import fetch
    from voxwatch.datasets.manifest import read_info

    cfg = _config(args)
    entries = remote.load(cfg.fetch_catalog)
    if args.name is None:
        table = [("name", "license", "speech", "files", "description")]
        for e in sorted(entries.values(), key=lambda e: e.name):
            pins = "pinned" if all(f.sha256 for f in e.files) else "needs --pin"
            files = "listed (source sha256)" if e.layout in remote.PARQUET_LAYOUTS else f"{len(e.files)} ({pins})"
            table.append((e.name, e.license, e.speech, files, e.description))
        print("\n".join(aligned(table, _width(args))))
        return 0
    if args.name not in entries:
        builder = next((e.name for e in entries.values() if args.name in remote.built_names(e)), None)
        if builder is not None:  # one set of a family the source's selection builds together
            raise UnknownDataset(f"{args.name!r} is built with the rest of its family by `voxwatch datasets fetch {builder}`")
        raise UnknownDataset(f"{args.name!r} is not in the fetch catalog; `voxwatch datasets fetch` lists it")
    entry = entries[args.name] if args.mirror is None else entries[args.name].mirrored(args.mirror)
    done = fetch(entry, cfg.datasets_dir, _catalog(cfg).names(), Limits(cfg.fetch_timeout_s, cfg.fetch_attempts,
                                                                          deadline_s=cfg.fetch_deadline_s or None),
                 pin=args.pin)
    for file, sha in done.pinned.items():
        remote.append_pin(cfg.fetch_catalog, entry.name, next(f for f in entry.files if f.name == file), sha)
        print(f"pinned {file} sha256 {sha} in {cfg.fetch_catalog}; check it against the source before you trust it")
    print(f"fetched {done.clips} clips of {entry.name} ({entry.license}; cite: {entry.citation}) as "
          f"{', '.join(f.name for f in done.folders)} into {cfg.datasets_dir}")
    for folder in done.folders:  # a published set's clips the VAD found no speech in (datasets.parquet_fetch)
        if silent := read_info(folder).extra.get("no_speech"):
            print(f"{folder.name}: left out {len(silent)} clip(s) the VAD found no speech in: {', '.join(silent[:10])}")
    print(f"measure it with: voxwatch run --datasets {','.join(f.name for f in done.folders)}")
    return 0


def cmd_emulate(args) -> int:
    from voxwatch.cli import emulate

    vendors = _names(args.vendors) if args.vendors != "all" else list(emulate.VENDORS)
    known = (*emulate.VENDORS, emulate.AGENT)
    unknown = sorted(set(vendors) - set(known))
    if unknown:
        raise config_mod.ConfigError(f"no emulator for {', '.join(unknown)}; known: {', '.join(known)}")
    cfg = _config(args)
    agent = None
    if emulate.AGENT in vendors:
        from voxwatch.conversations.cli import catalog as scenario_catalog

        options = emulate.AgentOptions(args.reply_delay * 1000, args.end_of_turn * 1000, not args.no_barge_in,
                                       args.voice, args.barge_in_stop * 1000, args.ahead * 1000)
        agent = emulate.agent_scenario(scenario_catalog(cfg).load(args.scenario), options)
    emulate.serve_forever(_catalog(cfg), [v for v in vendors if v != emulate.AGENT], cfg.chunk_ms, agent)
    return 0


def cmd_db(args) -> int:
    cfg = _config(args)
    store = open_store(cfg.store_url)  # opening a store applies any migration it lacks
    try:
        applied = getattr(store, "migrated", [])
        print(f"{redact(cfg.store_url)}: schema up to date"
              + (f" (applied migrations {', '.join(map(str, applied))})" if applied else ""))
        if args.action == "detach-before":
            if not hasattr(store, "detach_before"):
                raise StoreError("only the Postgres store is partitioned by month: a SQLite store has nothing to detach")
            detached = store.detach_before(args.month)
            print(f"detached {len(detached)} month(s), kept as tables for archiving: {', '.join(detached) or 'none'}")
        if args.action == "refresh" and hasattr(store, "refresh"):
            with Progress("refreshing", "series", wanted(args)) as bar:
                refreshed = store.refresh(progress=bar)
            compared = store.refresh_comparisons()
            lined = store.refresh_families()
            viewed = compare_refresh.refresh(store, Registry.default(files=cfg.registry_files))
            print(f"recomputed the rolling aggregates of {refreshed} series, {compared} paired comparisons, "
                  f"{lined} family views and {viewed} comparison views")
    finally:
        store.close()
    return 0


def cmd_serve(args) -> int:
    from voxwatch.web import operator
    from voxwatch.web.app import serve

    cfg = _config(args)
    url = cfg.store_url
    if store_kind(url) == SQLITE:  # a mistyped path is an error now, not an empty store (nor a 503 per page)
        open_store(url, create=False).close()
    limits = Limits(renders=args.renders, queue_wait_s=args.queue_wait, fresh_within_s=args.fresh_within)
    return serve(url, args.host, args.port, limits, args.access_log, cfg.recordings_dir, cfg.store_url,
                 cfg.preference_outputs_dir, cfg.datasets_dir, Registry.default(files=cfg.registry_files),
                 cfg.preference_prompts_dir, operator.token_from(), dict(cfg.region_zones))


def _region_config(args) -> config_mod.Config:
    cfg = _config(args)
    return replace(cfg, region=args.region) if args.region else cfg


def cmd_worker(args) -> int:
    from voxwatch.workers.celery_app import run_worker

    return run_worker(_region_config(args), args.concurrency, args.loglevel, args.heartbeat_file)


def cmd_beat(args) -> int:
    from voxwatch.workers.celery_app import run_beat

    Path(args.schedule_file).parent.mkdir(parents=True, exist_ok=True)
    return run_beat(_config(args), args.schedule_file, args.loglevel, args.heartbeat_file)


def cmd_tick(args) -> int:
    from voxwatch.workers.celery_app import BrokerUnreachable, enqueue_plan

    cfg = _region_config(args)
    models = _names(args.models) if args.models else None
    datasets = _names(args.datasets) if args.datasets else None
    registry, known = Registry.default(files=cfg.registry_files), _catalog(cfg).names()
    for m in models or []:
        registry.resolve(m)  # an unknown or floating id stops here, before anything is queued
    for d in datasets or []:
        if d not in known:
            raise UnknownDataset(f"unknown dataset {d!r}; `voxwatch datasets list` shows the catalog")
    try:
        run_id, queue = enqueue_plan(cfg, cfg.region, models=models, datasets=datasets, sample_size=args.sample_size,
                                     seed=args.seed)
    except BrokerUnreachable as exc:
        print(f"voxwatch: error: {exc}", file=sys.stderr)
        return 2
    print(f"run {run_id} planned on queue {queue}; a `voxwatch worker --region {cfg.region}` measures it")
    return 0


def cmd_dashboards_push(args) -> int:
    from voxwatch.grafana import dashboards

    try:
        boards = dashboards.load(Path(args.dir))
        pushed = dashboards.push(args.url, dashboards.token_from_env(), boards)
    except dashboards.DashboardError as exc:
        print(f"voxwatch: error: {exc}", file=sys.stderr)
        return 2
    for d in pushed:
        change = "created" if d.previous is None else f"updated (was version {d.previous})"
        print(f"{change} {d.uid} ({d.title}), version {d.version}: {d.url}")
    print(f"pushed {len(pushed)} dashboards to {redact(args.url)} (folder {dashboards.FOLDER_TITLE})")
    return 0


def cmd_dashboards_render(args) -> int:
    from voxwatch.grafana import panel_sql

    try:
        changed = panel_sql.write(Path(args.dir))
    except (OSError, ValueError) as exc:
        print(f"voxwatch: error: {exc}", file=sys.stderr)
        return 2
    for path in changed:
        print(f"rendered {path}")
    print(f"{len(changed)} dashboard(s) changed" if changed else "every dashboard is what its template renders")
    return 0


class _SubParsers(argparse._SubParsersAction):
    """Subcommands whose `--help` opens with their one-line help when they are given no description."""

    def add_parser(self, name: str, **kwargs):
        if kwargs.get("description") is None and kwargs.get("help"):
            kwargs["description"] = kwargs["help"]
        return super().add_parser(name, **kwargs)


class _Parser(argparse.ArgumentParser):
    """argparse, with a bad option said in one line on stderr (exit 2) like every other bad request."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.register("action", "parsers", _SubParsers)  # every level's subcommands, those of other modules too

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {one_line(message)} (see {self.prog} --help)\n")


HEARTBEAT_HELP = ("a file touched {what}, for a health check: `python -m voxwatch.workers.heartbeat FILE "
                  "--within SECONDS` (docker-compose.yml)")


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog="voxwatch", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=version_text(),
                   help="print the package version and the measurement method version, then exit")
    p.add_argument("--config", help="TOML config file (default: $VOXWATCH_CONFIG, ./voxwatch.toml, or the packaged default)")
    sub = p.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run one monitoring tick in-process and print the leaderboard")
    run.add_argument("--models", help="comma-separated exact model ids (default: the boards' configured models)")
    run.add_argument("--datasets", help="comma-separated dataset names (default: the boards' configured datasets)")
    run.add_argument("--sample-size", type=_checked("run", "sample_size"),
                     help="items per dataset (more than a dataset holds means all)")
    run.add_argument("--seed", type=_checked("run", "seed"), help="sampling seed (default: config, or fresh per run)")
    run.add_argument("--board", choices=config_mod.BOARDS,
                     help="measure one board only (s2s: its single-turn models, and its conversations)")
    run.add_argument("--conversation-turns", type=_checked("boards.s2s", "conversation_turns"),
                     help="hold each scenario's first N turns, 0 every turn (default: [boards.s2s] conversation_turns)")
    run.add_argument("--store", help="store URL (default: config)")
    listing.add_wide(run)
    add_progress(run)
    run.set_defaults(func=cmd_run)

    for name, func, what, lines in (
            ("leaderboard", cmd_leaderboard, "print the rolling leaderboard from the store",
             "csv (one line per series and metric), or json (the API's document)"),
            ("compare", cmd_compare, "print the paired comparisons the ranks come from (two models, the same clips)",
             "csv (one line per pair and statistic), or json (the API's /comparisons)")):
        board = sub.add_parser(name, help=what)
        board.add_argument("--window", choices=sorted(leaderboard.WINDOWS), default="30d",
                           help="the rolling window it covers (default 30d)")
        board.add_argument("--format", choices=("table", "csv", "json"), default="table", help=f"table (default), {lines}")
        board.add_argument("--store", help="store URL (default: config)")
        listing.add_wide(board)
        add_row_filters(board)
        board.set_defaults(func=func)

    ex = sub.add_parser("export", help="write the stored observations, conversations or conversation turns (all "
                                       "fields): every one, or those the filters select")
    ex.add_argument("--what", choices=("observations", "conversations", "turns"), default="observations",
                    help="observations (default); conversations (JSONL: each with its turns, as `voxwatch ingest` "
                         "reads them; CSV: one row each); or turns (one line each, with its conversation's context)")
    ex.add_argument("--format", choices=("csv", "jsonl"), default="jsonl",
                    help="jsonl (default: one record per line, every field) or csv")
    ex.add_argument("--out", help="file to write (default: standard output)")
    ex.add_argument("--store", help="store URL (default: config)")
    add_progress(ex)
    add_row_filters(ex)
    ex.set_defaults(func=cmd_export)

    ing = sub.add_parser("ingest", help="add rows from a JSONL export or spool file (idempotent)")
    ing.add_argument("file", help="a JSONL file of observations (an export or a spool file)")
    ing.add_argument("--store", help="store URL (default: config)")
    add_progress(ing)
    ing.set_defaults(func=cmd_ingest)

    prov = sub.add_parser("providers", help="the model registry").add_subparsers(dest="action", required=True)
    pls = prov.add_parser("list", help="every registered id with its board, protocol, status and key")
    listing.add_format(pls)
    pls.set_defaults(func=cmd_providers_list)

    emu = sub.add_parser("emulate", help="serve loopback emulators of the cloud vendors (tests and trials only; "
                                         "their rows never reach a leaderboard)")
    emu.add_argument("--vendors", default="all", help="all, or a comma-separated list of vendors; `agent` (never "
                                                       "in all) serves the reference agent (docs/CONVERSATIONS.md)")
    emu.add_argument("--scenario", default="clinic-desk", help="agent: the scenario the reference agent follows")
    emu.add_argument("--reply-delay", type=_seconds, default=0.3, metavar="SECONDS",
                     help="agent: its pause between the end of the caller's turn and its reply (default 0.3)")
    emu.add_argument("--end-of-turn", type=_seconds, default=0.8, metavar="SECONDS",
                     help="agent: the caller's silence that ends the caller's turn (default 0.8)")
    emu.add_argument("--no-barge-in", action="store_true", help="agent: keep talking when the caller talks over it")
    emu.add_argument("--barge-in-stop", type=_seconds, default=0.0, metavar="SECONDS",
                     help="agent: talked over, it stops this long after the caller's first word (default 0: at once)")
    emu.add_argument("--ahead", type=_seconds, default=0.0, metavar="SECONDS",
                     help="agent: stream each reply this far ahead of real time, as bot frameworks do (default 0)")
    emu.add_argument("--voice", choices=("espeak", "tone"), default="espeak",
                     help="agent: its replies spoken by eSpeak NG, or a short tone (faster; no words)")
    emu.set_defaults(func=cmd_emulate)

    dm = sub.add_parser("demo", help="fill a separate demo store from the emulators with every registered cloud model "
                                     "and print (or --serve) its boards, watermarked as emulated data")
    dm.add_argument("--store", help=f"the demo store (default {demo_store.DEFAULT_URL}; never the configured store)")
    dm.add_argument("--ticks", type=_bounded(1, 50, "--ticks"), default=DEMO_TICKS,
                    help=f"ticks to measure (default {DEMO_TICKS})")
    dm.add_argument("--sample-size", type=_bounded(2, 50, "--sample-size"), default=DEMO_SAMPLE,
                    help=f"items per dataset per tick (default {DEMO_SAMPLE})")
    dm.add_argument("--conversation-turns", type=_bounded(0, 19, "--conversation-turns"), default=2,
                    help="hold each S2S model's conversation for its first N turns once (0: none; default 2)")
    dm.add_argument("--keep", action="store_true", help="add to the demo store instead of starting it afresh")
    dm.add_argument("--serve", action="store_true", help="then serve it (voxwatch serve's pages, watermarked)")
    dm.add_argument("--host", default="127.0.0.1", help="with --serve: address to listen on (default 127.0.0.1)")
    dm.add_argument("--port", type=_port, default=8080, help="with --serve: port (default 8080)")
    listing.add_wide(dm)
    dm.set_defaults(func=cmd_demo)

    ds = sub.add_parser("datasets", help="the dataset catalog").add_subparsers(dest="action", required=True)
    dls = ds.add_parser("list", help="every dataset with clip counts and durations")
    listing.add_format(dls)
    dls.set_defaults(func=cmd_datasets_list)
    imp = ds.add_parser("import", help="import a folder of audio with a manifest.jsonl")
    imp.add_argument("dir", help="the folder: audio files and their manifest.jsonl")
    imp.add_argument("--name", required=True, help="the dataset's name in the catalog (what --datasets takes)")
    imp.add_argument("--allow-truncated", action="store_true",
                     help="import a file shorter than its header says as it is (refused otherwise)")
    imp.add_argument("--degrade", metavar="all|T,...",
                     help="also build NAME-<transform> from the clean clips for every transform (all) or those named "
                          f"({', '.join(TRANSFORMS)}), paired by utterance id")
    imp.add_argument("--language", default="en",
                     help="what the clips speak, a BCP 47 tag (default en): it picks the WER normalizer and is "
                          "declared to every provider that takes one")
    imp.set_defaults(func=cmd_datasets_import)
    txt = ds.add_parser("import-text", help="import prompts for the TTS board from a .txt (one a line) or a .jsonl")
    txt.add_argument("file", help="a .txt file (one prompt a non-blank line) or a .jsonl of {id, text, category} lines")
    txt.add_argument("--name", required=True, help="the dataset's name in the catalog (what --datasets takes)")
    txt.set_defaults(func=cmd_datasets_import_text)
    fet = ds.add_parser("fetch", help="download a public speech set from the fetch catalog into the dataset catalog "
                                      "(no NAME: list the fetch catalog)")
    fet.add_argument("name", nargs="?", help="the fetch catalog entry (e.g. librispeech-test-clean-40)")
    fet.add_argument("--pin", action="store_true",
                     help="fetch files the catalog has no sha256 for, and record the sha256 of this first download "
                          "in [datasets] fetch_catalog")
    fet.add_argument("--mirror", metavar="URL", help="download from this http(s)://HOST[:PORT] instead of the "
                                                     "catalog URLs' host, the same paths (a mirror of the source)")
    listing.add_wide(fet)
    fet.set_defaults(func=cmd_datasets_fetch)

    db = sub.add_parser("db", help="the store's schema").add_subparsers(dest="action", required=True)
    for action, text in (("upgrade", "apply any schema migration the store lacks"),
                         ("refresh", "upgrade, then recompute every series' rolling aggregates (Postgres)")):
        cmd = db.add_parser(action, help=text)
        cmd.add_argument("--store", help="store URL (default: config)")
        add_progress(cmd)
        cmd.set_defaults(func=cmd_db)
    cmd = db.add_parser("detach-before", help="detach the observations of every month before MONTH (Postgres), "
                                              "keeping each as a table of its own for archiving (docs/STORE.md)")
    cmd.add_argument("month", type=_month, help="the first month kept, as YYYY-MM")
    cmd.add_argument("--store", help="store URL (default: config)")
    cmd.set_defaults(func=cmd_db)

    sv = sub.add_parser("serve", help="serve the public leaderboard web app and its read-only JSON API")
    sv.add_argument("--store", help="store URL (default: config)")
    sv.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1; 0.0.0.0 for all)")
    sv.add_argument("--port", type=_port, default=8080, help="port to listen on (default 8080)")
    sv.add_argument("--renders", type=_positive, default=Limits.renders,
                    help="pages rendered at once; the rest wait --queue-wait, then get 503 (default %(default)s)")
    sv.add_argument("--queue-wait", type=_seconds, default=Limits.queue_wait_s, metavar="SECONDS",
                    help="how long a page waits for a render slot before its 503 + Retry-After (default %(default)s)")
    sv.add_argument("--fresh-within", type=_seconds, default=Limits.fresh_within_s, metavar="SECONDS",
                    help="a write to the store shows on the pages within this (default %(default)s; 0: on the next request)")
    sv.add_argument("--access-log", action="store_true", help="log a line per request (off: it costs as much as a page)")
    sv.set_defaults(func=cmd_serve)

    wk = sub.add_parser("worker", help="distributed mode: a Celery worker measuring its region's queue")
    wk.add_argument("--region", type=_checked("worker", "region"),
                    help="the region it serves and stamps on every row (default: config)")
    wk.add_argument("--concurrency", type=_positive, default=1,
                    help="measurements at a time (default 1; local engines share the CPU with the clock)")
    wk.add_argument("--store", help="store URL (default: config)")
    wk.add_argument("--loglevel", default="info", help="Celery's log level (default info)")
    wk.add_argument("--heartbeat-file", help=HEARTBEAT_HELP.format(what="while connected to the broker"))
    wk.set_defaults(func=cmd_worker)

    bt = sub.add_parser("beat", help="distributed mode: schedule a tick per board, dataset and region")
    bt.add_argument("--schedule-file", default="var/celerybeat-schedule", help="where beat keeps its last run times")
    bt.add_argument("--loglevel", default="info", help="Celery's log level (default info)")
    bt.add_argument("--heartbeat-file", help=HEARTBEAT_HELP.format(what="after every pass of its loop"))
    bt.set_defaults(func=cmd_beat)

    tk = sub.add_parser("tick", help="distributed mode: enqueue one tick now for a region's workers")
    tk.add_argument("--region", type=_checked("worker", "region"),
                    help="the region whose workers measure it (default: config)")
    tk.add_argument("--models", help="comma-separated exact model ids (default: the boards' configured models)")
    tk.add_argument("--datasets", help="comma-separated dataset names (default: the boards' configured datasets)")
    tk.add_argument("--sample-size", type=_checked("run", "sample_size"), help="items per dataset")
    tk.add_argument("--seed", type=_checked("run", "seed"), help="sampling seed (default: config, or fresh)")
    tk.set_defaults(func=cmd_tick)

    dash = sub.add_parser("dashboards", help="the Grafana dashboards (dashboards/*.json)").add_subparsers(
        dest="action", required=True)
    dpush = dash.add_parser("push", help="create or update each dashboard in a Grafana by its uid "
                                         "(token from $VOXWATCH_GRAFANA_TOKEN)")
    dpush.add_argument("--url", required=True, help="Grafana's base URL, e.g. http://localhost:3000")
    dpush.add_argument("--dir", default="dashboards", help="folder of dashboard JSON files (default: ./dashboards)")
    dpush.set_defaults(func=cmd_dashboards_push)
    drender = dash.add_parser("render", help="write each dashboard's panel SQL from dashboards/sql/ with the "
                                             "floors and status sets of voxwatch/metrics/series.py")
    drender.add_argument("--dir", default="dashboards", help="folder of dashboard JSON files (default: ./dashboards)")
    drender.set_defaults(func=cmd_dashboards_render)

    from voxwatch.alerts.cli import register as register_alerts
    from voxwatch.preference.cli import register as register_preference
    from voxwatch.cli.runs import register as register_runs

    register_alerts(sub, _config)
    register_runs(sub, _config)
    register_scenarios(sub, _config)
    register_preference(sub, _config)
    return p


def _checked(section: str, key: str):
    """An option that sets a config key, checked by that key's one check (config.check_text)."""
    def parse(text: str):
        try:
            return config_mod.check_text(section, key, text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"{text!r}: {exc} (as [{section}] {key})") from None
    parse.__name__ = key
    return parse


def _bounded(low: int, high: int, what: str):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = low - 1
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{text!r}: expected {what}")
        return value
    return parse


_positive = _bounded(1, config_mod.MAX_INT, "a positive integer")
_port = _bounded(1, 65535, "a port number, 1-65535")


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError("expected a number of seconds, 0 or more")
    return value


def version_text() -> str:
    """What `--version` prints: the package's version and the method version every row records."""
    from voxwatch import __version__
    from voxwatch.metrics import METHOD_VERSION

    return f"voxwatch {__version__} (method v{METHOD_VERSION})"


UNKEPT = 3
"""The exit code when rows were measured that neither the store nor any spool folder would take
(store.spool.Unkept): the count and every folder tried are said in one line."""

PIPE_CLOSED = 128 + signal.SIGPIPE
"""The exit code when the reader of standard output went away (`| head`): what a shell reports for a
tool SIGPIPE ended, said without a traceback."""


def main(argv: list[str] | None = None) -> int:
    try:
        code = _dispatch(argv)
        sys.stdout.flush()  # inside the try: a closed pipe shows here, not in the interpreter's exit
        return code
    except BrokenPipeError:
        # the Python docs' recipe (library/signal, "Note on SIGPIPE"): point stdout at devnull so the
        # interpreter's last flush does not fail again, and exit quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return PIPE_CLOSED


def _month(text: str) -> int:
    try:
        return parse_month(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _dispatch(argv: list[str] | None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except USER_ERRORS as exc:
        print(f"voxwatch: error: {one_line(str(exc))}", file=sys.stderr)
        return 2
    except Unkept as exc:  # a conversation the store refused, with every spool folder full
        print(f"voxwatch: error: {one_line(str(exc))}", file=sys.stderr)
        return UNKEPT
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (Terminated) where a command unwinds on it
        what = "terminated (SIGTERM)" if isinstance(exc, Terminated) else "interrupted"
        left = "; ".join(getattr(exc, "__notes__", ())) or "completed rows are stored"
        print(f"voxwatch: {what}; {left}", file=sys.stderr)
        return TERMINATED if isinstance(exc, Terminated) else 130

