"""The client's side of the Postgres dictionaries (voxwatch.store.layout): observations become fact rows.

Each store keeps the refs it has seen. A value it has not seen is inserted (a concurrent writer's
identical insert is skipped by the digest's unique index) and its ref read back, in a transaction
of its own on a connection of its own, so a lookup can happen while the store's connection is in
the middle of a COPY, and a ref is cached only once it is committed. Entries are never deleted, so
the cache stays true for the life of the database.

Conversion is a generator: a COPY writes each fact row as it is made, so the server inserts rows
while the client converts the next ones (the two cores work at once).
"""

from __future__ import annotations

from operator import attrgetter
from typing import Callable, Iterator, Sequence

import psycopg

from voxwatch.foundation.observation import Observation
from voxwatch.store import partitions
from voxwatch.store.layout import DICTIONARIES, INLINE, KEY_NAMES, digest_of

LOOKAHEAD = 5000
"""When a clip or context is missing, those of this many rows from there on (in key order) are looked
up with it: one round trip, not one a row. Names are looked up for the whole batch first (`_keys`)."""
assert KEY_NAMES == ("run_id", "model_id", "dataset", "clip_id") and tuple(DICTIONARIES) == ("obs_clips", "obs_contexts")
_clip = attrgetter(*DICTIONARIES["obs_clips"])
_context = attrgetter(*DICTIONARIES["obs_contexts"])
_inline = attrgetter(*(f for f in INLINE if f != "attempt"))


class Dictionaries:
    def __init__(self, types: dict[str, str], connect: Callable[[], psycopg.Connection]) -> None:
        self.types = types  # field -> SQL type, for the arrays a lookup sends
        self.connect = connect  # the lookups' own autocommit connection
        self.names: dict[str, int] = {}
        self.run_months: dict[int, int] = {}  # run ref -> its partition's month (obs_runs)
        self.months: set[int] = set()  # the months whose partition this store has seen attached
        self.entries: dict[str, dict[tuple, int]] = {table: {} for table in DICTIONARIES}

    def facts(self, rows: Sequence[Observation], spans: Spans) -> Iterator[tuple]:
        """The fact rows (layout.FACT_COLUMNS order) of these observations in key order, looking up
        what is new; each row's (run, context) span is widened in `spans` as it goes.

        Key order lets the server append each key at the right edge of the primary key's index (its
        fast path for the rightmost leaf) instead of descending the tree for every row. The keys (and
        so each run's month, and its partition) are settled here, before the caller's COPY starts: a
        statement under way never sees a partition attached after it began."""
        return self._facts(rows, self._keys(rows), spans)

    def _facts(self, rows: Sequence[Observation], keys: list[tuple], spans: Spans) -> Iterator[tuple]:
        clips, contexts = self.entries["obs_clips"], self.entries["obs_contexts"]
        clip, context, inline, seen = _clip, _context, _inline, spans.spans  # locals: the client's hot loop
        last_context, last_ref, last_key, span = None, 0, -1, [0.0, 0.0]
        order = sorted(range(len(rows)), key=keys.__getitem__)
        for n, i in enumerate(order):
            r = rows[i]
            c = context(r)
            while True:  # a second time only after a miss was looked up
                try:
                    if c != last_context:  # consecutive rows mostly share their context: skip the hash
                        last_context, last_ref = c, contexts[c]
                    fact = keys[i] + (clips[clip(r)], last_ref) + inline(r)
                    break
                except KeyError:
                    self._learn([], [rows[j] for j in order[n:n + LOOKAHEAD]])
            key, at = fact[0] << 32 | last_ref, r.started_at
            if key != last_key:  # in key order, a run's rows of one context mostly come together
                last_key, span = key, seen.setdefault(key, [at, at])
            if at < span[0]:
                span[0] = at
            elif at > span[1]:
                span[1] = at
            yield fact

    def _keys(self, rows: Sequence[Observation]) -> list[tuple]:
        """Each row's key as refs with its run's month (layout.FACT_KEY), its names and its runs' months
        looked up first when any is new."""
        try:
            return self._refs(rows)
        except KeyError:
            self._learn(rows, [])
            return self._refs(rows)

    def _refs(self, rows: Sequence[Observation]) -> list[tuple]:
        names, months = self.names, self.run_months
        return [(names[r.run_id], names[r.model_id], names[r.dataset], names[r.clip_id], r.attempt,
                 months[names[r.run_id]]) for r in rows]

    def _learn(self, rows: Sequence[Observation], entries_of: Sequence[Observation]) -> None:
        """Look up (inserting what is missing) every name of `rows` and every clip and context of
        `entries_of` that the cache lacks."""
        names = sorted({n for r in rows for n in (r.run_id, r.model_id, r.dataset, r.clip_id)} - self.names.keys())
        first: dict[str, float] = {}  # each run's first row here: the month of a run new to the store
        for r in rows:
            if r.run_id not in self.names or self.names[r.run_id] not in self.run_months:
                first[r.run_id] = min(first.get(r.run_id, r.started_at), r.started_at)
        new = {"obs_clips": {_clip(r) for r in entries_of}, "obs_contexts": {_context(r) for r in entries_of}}
        new = {t: list(values - self.entries[t].keys()) for t, values in new.items()}
        conn = self.connect()
        with conn.transaction(), conn.cursor() as cur:
            found_names = self._names(cur, names) if names else {}
            found = {table: self._entries(cur, table, values) for table, values in new.items() if values}
            refs = {**self.names, **found_names}
            run_months = self._run_months(cur, {refs[run]: partitions.month_of(at) for run, at in first.items()})
            partitions.ensure(cur, set(run_months.values()) - self.months)
        self.names.update(found_names)  # cached once committed
        self.run_months.update(run_months)
        self.months.update(run_months.values())
        for table, refs in found.items():
            self.entries[table].update(refs)

    @staticmethod
    def _run_months(cur: psycopg.Cursor, months: dict[int, int]) -> dict[int, int]:
        """Each run's month (partitions.RUNS_DDL): the one stored, else this one (its first row's here)."""
        if not months:
            return {}
        refs = list(months)
        cur.execute("INSERT INTO obs_runs SELECT * FROM unnest(%s::integer[], %s::integer[]) ON CONFLICT DO NOTHING",
                    (refs, [months[r] for r in refs]))
        return dict(cur.execute("SELECT run_ref, month FROM obs_runs WHERE run_ref = ANY(%s)", (refs,)))

    @staticmethod
    def _names(cur: psycopg.Cursor, names: list[str]) -> dict[str, int]:
        cur.execute("INSERT INTO obs_names (digest, name) SELECT voxwatch_digest(ARRAY[n]), n "
                    "FROM unnest(%s::text[]) AS u(n) ON CONFLICT (digest) DO NOTHING", (names,))
        # a second statement, so it sees an identical entry a concurrent writer committed meanwhile
        return dict(cur.execute("SELECT u.n, o.ref FROM unnest(%s::text[]) AS u(n) "
                                "JOIN obs_names o ON o.digest = voxwatch_digest(ARRAY[u.n])", (names,)))

    def _entries(self, cur: psycopg.Cursor, table: str, values: list[tuple]) -> dict[tuple, int]:
        cols = DICTIONARIES[table]
        arrays = [[v[i] for v in values] for i in range(len(cols))]
        unnest = "unnest(" + ", ".join(f"%s::{self.types[c]}[]" for c in cols) + ")"
        names = ", ".join(cols)
        cur.execute(f"INSERT INTO {table} (digest, {names}) SELECT {digest_of(cols, 'u', self.types)}, {names} "
                    f"FROM {unnest} AS u({names}) ON CONFLICT (digest) DO NOTHING", arrays)
        found = cur.execute(f"SELECT u.i, o.ref FROM {unnest} WITH ORDINALITY AS u({names}, i) "
                            f"JOIN {table} o ON o.digest = {digest_of(cols, 'u', self.types)}", arrays)
        return {values[i - 1]: ref for i, ref in found}


class Spans:
    """The first and last started_at of each (run, context) that fact rows touch (obs_spans), keyed by
    run_ref << 32 | context_ref (cheaper to hash than a pair, in the hot loop of `facts`)."""

    def __init__(self) -> None:
        self.spans: dict[int, list[float]] = {}

    def arrays(self) -> list[list]:
        """The parameters of the spans' upsert, in key order (concurrent writers of the same runs then
        lock their spans in one order)."""
        keys = sorted(self.spans)
        return [[k >> 32 for k in keys], [k & 0xFFFFFFFF for k in keys], [self.spans[k][0] for k in keys],
                [self.spans[k][1] for k in keys]]
