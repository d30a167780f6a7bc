"""The preference board's tables, for both stores: their DDL, built from voxwatch.store.preference_rows,
and the reads and writes (`PreferenceRows`, mixed into each store over its `_cursor(what)`).

preference_prompts (key: set, prompt), preference_outputs (one per set, prompt and configuration),
preference_pairs, preference_raters (a token's sha256, never the token), preference_ratings (one per
rater, pair and rubric; CMOS -3..+3 checked by the database too). A rating is checked before it is
stored (rubrics.check_rating: range and gate, against the prompt's stored tags and condition), and a
batch of ratings is stored whole or not at all.
"""

from __future__ import annotations

import hashlib
import json
from contextlib import AbstractContextManager
from dataclasses import fields
from typing import Any, Iterable, Sequence

from voxwatch.store.preference_rows import SIDES, OutputRow, PairRow, PromptRow, RaterRow, RatingRow, names
from voxwatch.foundation.rubrics import (CMOS_MAX, CMOS_MIN, AlreadyRated, RatingError, answered_text,
                                        check_answered_at, check_rating)

PROMPTS, OUTPUTS, PAIRS, RATERS, RATINGS = ("preference_prompts", "preference_outputs", "preference_pairs",
                                           "preference_raters", "preference_ratings")
TABLES = {PROMPTS: PromptRow, OUTPUTS: OutputRow, PAIRS: PairRow, RATERS: RaterRow, RATINGS: RatingRow}
_CONSTRAINTS = {
    PROMPTS: ["PRIMARY KEY (prompt_set, prompt_id)"],
    OUTPUTS: ["UNIQUE (prompt_set, prompt_id, config_id)"],
    PAIRS: ["CHECK (shown_first IN ('a', 'b'))"],
    RATERS: ["UNIQUE (token_sha256)"],
    RATINGS: ["UNIQUE (rater_id, pair_id, rubric)", f"CHECK (cmos BETWEEN {CMOS_MIN} AND {CMOS_MAX})",
              "CHECK (shown_first IN ('a', 'b'))", f"FOREIGN KEY (rater_id) REFERENCES {RATERS} (rater_id)",
              f"FOREIGN KEY (pair_id) REFERENCES {PAIRS} (pair_id)"],
}
_INDEXES = [f"CREATE INDEX {{}}preference_pairs_prompt ON {PAIRS} (prompt_set, prompt_id)",
            f"CREATE INDEX {{}}preference_ratings_pair ON {RATINGS} (pair_id)"]
_TYPES = {"sqlite": {"int": "INTEGER", "float": "REAL", "bool": "INTEGER", "str": "TEXT"},
          "postgres": {"int": "bigint", "float": "double precision", "bool": "boolean", "str": "text"}}
_SERIAL = {"sqlite": "INTEGER PRIMARY KEY", "postgres": "bigserial PRIMARY KEY"}


def _base(annotation: Any) -> tuple[str, bool]:
    text = str(annotation)
    return text.split("|")[0].strip(), "None" in text


def column_types(cls, dialect: str) -> list[tuple[str, str]]:
    """(name, type) per field; the table's own id (its first field, `<x>_id: int | None`) a serial key."""
    cols = []
    for i, f in enumerate(fields(cls)):
        base, optional = _base(f.type)
        if i == 0 and f.name.endswith("_id") and optional:
            cols.append((f.name, _SERIAL[dialect]))
        else:
            cols.append((f.name, _TYPES[dialect][base] + ("" if optional else " NOT NULL")))
    return cols


def ddl(dialect: str) -> list[str]:
    """Every table and index, in dependency order (IF NOT EXISTS on SQLite, which runs it on each open)."""
    exists = "IF NOT EXISTS " if dialect == "sqlite" else ""
    out = [f"CREATE TABLE {exists}{table} ({', '.join([f'{n} {t}' for n, t in column_types(cls, dialect)] + _CONSTRAINTS[table])})"
           for table, cls in TABLES.items()]
    return out + [sql.format(exists) for sql in _INDEXES]


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


_BOOLS = {f.name for cls in TABLES.values() for f in fields(cls) if _base(f.type)[0] == "bool"}


def _read(cls, values: Sequence[Any]):
    return cls(*(bool(v) if n in _BOOLS and v is not None else v for n, v in zip(names(cls), values)))


def _select(table: str, where: str = "", order: str = "") -> str:
    return (f"SELECT {', '.join(names(TABLES[table]))} FROM {table}" + (f" WHERE {where}" if where else "")
            + (f" ORDER BY {order}" if order else ""))


class PreferenceRows:
    """The preference board's reads and writes, over the store's `_cursor(what)` (a cursor in one
    transaction, a database error raised as a StoreError) and its placeholder `MARK`."""

    MARK = "?"

    def _cursor(self, what: str) -> AbstractContextManager:
        raise NotImplementedError

    def _insert_row(self, cur, table: str, row, returning: bool = True) -> int | None:
        cols = names(TABLES[table])
        own_id = cols[0] if cols[0].endswith("_id") and getattr(row, cols[0]) is None and table != PROMPTS else None
        cols = tuple(c for c in cols if c != own_id)
        sql = (f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join([self.MARK] * len(cols))})"
               + (f" RETURNING {own_id}" if own_id and returning else ""))
        cur.execute(sql, tuple(getattr(row, c) for c in cols))
        return cur.fetchone()[0] if own_id and returning else None

    def _rows(self, what: str, table: str, where: str = "", args: tuple = (), order: str = "") -> list:
        with self._cursor(f"read the {what} of") as cur:
            cur.execute(_select(table, where, order), args)
            return [_read(TABLES[table], r) for r in cur.fetchall()]

    def _one(self, table: str, column: str, value: Any):
        found = self._rows(table.removeprefix("preference_"), table, f"{column} = {self.MARK}", (value,))
        return found[0] if found else None

    # prompts
    def add_prompts(self, rows: Iterable[PromptRow]) -> int:
        """Store prompts not stored yet (a prompt set's name pins its contents: prompt_catalog)."""
        added = 0
        with self._cursor("write prompts to") as cur:
            for row in rows:
                cur.execute(f"SELECT 1 FROM {PROMPTS} WHERE prompt_set = {self.MARK} AND prompt_id = {self.MARK}",
                            (row.prompt_set, row.prompt_id))
                if cur.fetchone() is None:
                    self._insert_row(cur, PROMPTS, row, returning=False)
                    added += 1
        return added

    def preference_prompts(self, prompt_set: str | None = None) -> list[PromptRow]:
        return self._rows("prompts", PROMPTS, f"prompt_set = {self.MARK}" if prompt_set else "",
                          (prompt_set,) if prompt_set else (), "prompt_set, prompt_id")

    # outputs
    def put_output(self, row: OutputRow) -> int:
        """Store an output; one already stored for its (set, prompt, configuration) is kept when ok,
        and replaced when it failed (a retry: attempts counted on). Returns the output's id."""
        with self._cursor("write an output to") as cur:
            cur.execute(f"SELECT output_id, status, attempts FROM {OUTPUTS} WHERE prompt_set = {self.MARK} AND "
                        f"prompt_id = {self.MARK} AND config_id = {self.MARK}",
                        (row.prompt_set, row.prompt_id, row.config_id))
            found = cur.fetchone()
            if found is None:
                return self._insert_row(cur, OUTPUTS, row)
            output_id, status, attempts = found
            if status == "ok":
                return output_id
            cols = [c for c in names(OutputRow) if c != "output_id"]
            values = [getattr(row, c) for c in cols]
            values[cols.index("attempts")] = attempts + 1
            cur.execute(f"UPDATE {OUTPUTS} SET {', '.join(f'{c} = {self.MARK}' for c in cols)} "
                        f"WHERE output_id = {self.MARK}", (*values, output_id))
            return output_id

    def preference_outputs(self, prompt_set: str | None = None) -> list[OutputRow]:
        return self._rows("outputs", OUTPUTS, f"prompt_set = {self.MARK}" if prompt_set else "",
                          (prompt_set,) if prompt_set else (), "output_id")

    def preference_output(self, output_id: int) -> OutputRow | None:
        return self._one(OUTPUTS, "output_id", output_id)

    # pairs
    def add_pairs(self, rows: Iterable[PairRow]) -> list[int]:
        """Store a design's pairs in one transaction; returns their ids, in order."""
        with self._cursor("write pairs to") as cur:
            return [self._insert_row(cur, PAIRS, row) for row in rows]

    def preference_pairs(self, design: str | None = None) -> list[PairRow]:
        return self._rows("pairs", PAIRS, f"design = {self.MARK}" if design else "", (design,) if design else (),
                          "pair_id")

    def preference_pair(self, pair_id: int) -> PairRow | None:
        return self._one(PAIRS, "pair_id", pair_id)

    def pairs_for_rater(self, rater_id: int, limit: int = 20) -> list[PairRow]:
        """The pairs this rater has not rated yet, those with the fewest raters first (so every pair
        reaches its two raters before any gets a third), then in pair order."""
        cols = ", ".join(f"p.{c}" for c in names(PairRow))
        m = self.MARK
        with self._cursor("read the pairs of") as cur:
            cur.execute(f"SELECT {cols} FROM {PAIRS} p LEFT JOIN (SELECT pair_id, count(DISTINCT rater_id) AS n "
                        f"FROM {RATINGS} GROUP BY pair_id) r ON r.pair_id = p.pair_id WHERE NOT EXISTS (SELECT 1 FROM "
                        f"{RATINGS} x WHERE x.pair_id = p.pair_id AND x.rater_id = {m}) "
                        f"ORDER BY coalesce(r.n, 0), p.pair_id LIMIT {m}", (rater_id, limit))
            return [_read(PairRow, r) for r in cur.fetchall()]

    # raters
    def add_rater(self, token: str, created_at: float, label: str = "") -> RaterRow:
        """Store a rater under their token's sha256 (the token is never stored)."""
        row = RaterRow(None, token_digest(token), created_at, label)
        with self._cursor("write a rater to") as cur:
            row.rater_id = self._insert_row(cur, RATERS, row)
        return row

    def rater_by_token(self, token: str) -> RaterRow | None:
        """The rater a link's token names, or None (compared by sha256: the token is not stored)."""
        return self._one(RATERS, "token_sha256", token_digest(token))

    def preference_raters(self) -> list[RaterRow]:
        return self._rows("raters", RATERS, order="rater_id")

    # ratings
    def add_ratings(self, rows: Iterable[RatingRow], where: Sequence[str] | None = None) -> int:
        """Store ratings, each checked (rater and pair exist, rubric asked on the pair's prompt, CMOS
        in range, a side shown first); all or none. A rating stored before with the same answer is
        skipped; a different answer to the same (rater, pair, rubric) is refused. Returns added.
        `where` names each row in an error (a file's line), else "rating <n>"."""
        m, added = self.MARK, 0
        with self._cursor("write ratings to") as cur:
            prompts: dict[int, tuple[list[str], str]] = {}  # per pair: its prompt's tags and condition
            raters: set[int] = set()  # found in the store: a file's many lines per rater ask once
            for n, row in enumerate(rows, 1):
                label = where[n - 1] if where is not None else f"rating {n}"
                what = f"{label} (rater {row.rater_id}, pair {row.pair_id}, {row.rubric})"
                if row.shown_first not in SIDES:
                    raise RatingError(f"{what}: shown_first must be 'a' or 'b', got {row.shown_first!r}")
                if row.pair_id not in prompts:
                    cur.execute(f"SELECT q.tags, q.condition FROM {PAIRS} p JOIN {PROMPTS} q ON q.prompt_set = "
                                f"p.prompt_set AND q.prompt_id = p.prompt_id WHERE p.pair_id = {m}", (row.pair_id,))
                    found = cur.fetchone()
                    if found is None:
                        raise RatingError(f"{what}: no pair {row.pair_id} (with its prompt) in the store")
                    prompts[row.pair_id] = (json.loads(found[0]), found[1])
                if row.rater_id not in raters:
                    cur.execute(f"SELECT 1 FROM {RATERS} WHERE rater_id = {m}", (row.rater_id,))
                    if cur.fetchone() is None:
                        raise RatingError(f"{what}: no rater {row.rater_id} in the store")
                    raters.add(row.rater_id)
                try:
                    check_rating(row.rubric, row.cmos, *prompts[row.pair_id])
                    check_answered_at(row.answered_at)
                except RatingError as exc:
                    raise RatingError(f"{what}: {exc}") from None
                cur.execute(f"SELECT cmos, answered_at, shown_first FROM {RATINGS} WHERE rater_id = {m} AND "
                            f"pair_id = {m} AND rubric = {m}", (row.rater_id, row.pair_id, row.rubric))
                stored = cur.fetchone()
                if stored is not None:
                    if tuple(stored) == (row.cmos, row.answered_at, row.shown_first):
                        continue
                    raise AlreadyRated(f"{what}: already answered {stored[0]:+d} at {answered_text(stored[1])}; "
                                       "a rating is not changed")
                self._insert_row(cur, RATINGS, row, returning=False)
                added += 1
        return added

    def preference_ratings(self, pair_id: int | None = None, rater_id: int | None = None) -> list[RatingRow]:
        where = " AND ".join(c for c, v in ((f"pair_id = {self.MARK}", pair_id), (f"rater_id = {self.MARK}", rater_id))
                             if v is not None)
        return self._rows("ratings", RATINGS, where, tuple(v for v in (pair_id, rater_id) if v is not None), "rating_id")
