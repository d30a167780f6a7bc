"""Rating collection (docs/PREFERENCE.md "Rating in the browser"): a rater's link, their pairs, the
answers stored, and the ratings' export.

A link is /rate/<token>: no account; the token is looked up by its sha256 and an unknown one is a
404 that says nothing more. A pair's page plays the two outputs as "first" and "second" in the
pair's shown order (never a model's or configuration's name, and the audio URLs say only
first/second), then asks the rubrics rubrics.asked() gives for the prompt, group by group, each on
a CMOS scale from "first much better" (+3) to "second much better" (-3). The answers are turned into
the pair's A/B terms (rubrics.pair_terms) and stored whole by store.add_ratings, with the time and
the side shown first; a form that misses or garbles an answer is shown again with the reason and
nothing is stored. A store that cannot be written answers 503 with the answers kept in the page,
to send again. Every response here is per rater (or a write), so none passes the page cache; each
takes a render slot as a board's render does (cache.py). A POST is taken only from the site's own
pages (same_site.py), a second answer to a rated pair is a 409, and the ratings' export is the
operator's (operator.py): it maps pairs to configurations and gold kinds, which no rater may see.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from dataclasses import dataclass
from pathlib import Path

from starlette.datastructures import QueryParams
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import FileResponse, RedirectResponse, Response
from starlette.routing import Route

from voxwatch.foundation.redaction import MASK
from voxwatch.preference.cli import RATE_PATH
from voxwatch.preference.generate import resolve_audio
from voxwatch.preference.ratings_io import FORMATS, dumps, export_records
from voxwatch.store.preference_rows import GOLD_BROKEN, MAX_ID, PairRow, PromptRow, RaterRow, RatingRow
from voxwatch.foundation.rubrics import (BY_NAME, CMOS_MAX, CMOS_MIN, GROUPS, AlreadyRated, RatingError, Rubric, asked,
                                        pair_terms)

from voxwatch.web import operator, same_site
from voxwatch.web.source import StoreUnavailable, log

EXPORT = "/api/v1/preference/ratings."
"""The ratings' CSV and JSONL export: ratings.csv, ratings.jsonl (rater ids, never tokens). Operator
data (it names each pair's configurations and gold kind): served only with the operator's token."""
SHOWN = ("first", "second")
PROMPT = "prompt"  # the caller's request, played above the two replies
SCALE = tuple((v, label) for v, label in zip(range(CMOS_MAX, CMOS_MIN - 1, -1), (
    "first much better", "first better", "first slightly better", "about the same", "second slightly better",
    "second better", "second much better")))
"""The answers a rubric offers, in the order shown: (CMOS in shown terms, positive = first better; label)."""
GROUP_TITLES = {"overall": "Overall", "speech": "Speech", "content": "Content", "delivery": "Delivery",
                "conditional": "About this recording"}
assert set(GROUP_TITLES) == set(GROUPS)
NOT_KNOWN = "This rating link is not known."
ALREADY = "You have rated this pair already; a rating once given is not changed."
PRIVATE = {"Cache-Control": "no-store"}


@dataclass(frozen=True)
class PairView:
    """What a pair's page needs: the pair, its prompt, the rubrics asked, and whether this rater rated it."""
    pair: PairRow
    prompt: PromptRow
    rubrics: tuple[Rubric, ...]
    rated: bool

    @property
    def groups(self) -> list[tuple[str, str, list[Rubric]]]:
        """(group, title, rubrics) in the order asked, groups without a rubric here left out."""
        return [(g, GROUP_TITLES[g], [r for r in self.rubrics if r.group == g]) for g in GROUPS
                if any(r.group == g for r in self.rubrics)]


def logged_path(path: str) -> str:
    """A request path as the log may show it: a rater's token is their credential, so it is masked."""
    return re.sub(r"^/rate/[^/?]+", "/rate/" + MASK, path)


def _render(request: Request, template: str, status_code: int = 200, **context) -> Response:
    return request.app.state.templates.TemplateResponse(request, template, {"scale": SCALE, **context},
                                                        status_code=status_code, headers=PRIVATE)


async def _call(request: Request, what: str, work):
    return await request.app.state.ratings.call(what, work)


async def _rater(request: Request) -> RaterRow:
    token = request.path_params["token"]
    rater = await _call(request, "find a rater in", lambda s: s.rater_by_token(token))
    if rater is None:
        raise HTTPException(404, NOT_KNOWN)
    return rater


def _pair_view(store, rater_id: int, pair_id: int) -> PairView | None:
    pair = store.preference_pair(pair_id)
    if pair is None:
        return None
    prompt = next((p for p in store.preference_prompts(pair.prompt_set) if p.prompt_id == pair.prompt_id), None)
    if prompt is None:
        return None
    rated = bool(store.preference_ratings(pair_id=pair_id, rater_id=rater_id))
    return PairView(pair, prompt, asked(json.loads(prompt.tags), prompt.condition), rated)


def _pair_id(text: str) -> int:
    """The URL's pair id, or a 404: only digits, and at most MAX_ID (no store holds a larger one, SQLite
    cannot even be asked about it, and Python will not read an integer of over 4,300 digits)."""
    if re.fullmatch(r"[0-9]{1,19}", text) and int(text) <= MAX_ID:
        return int(text)
    raise HTTPException(404, f"There is no pair {text} to rate." if len(text) <= 20 else "There is no such pair to rate.")


async def _view(request: Request, rater: RaterRow) -> PairView:
    pair_id = _pair_id(request.path_params["pair_id"])
    view = await _call(request, "read a pair from", lambda s: _pair_view(s, rater.rater_id, pair_id))
    if view is None:
        raise HTTPException(404, f"There is no pair {pair_id} to rate.")
    return view


def _next_url(token: str, pairs: list[PairRow]) -> str:
    return f"{RATE_PATH}{token}/pair/{pairs[0].pair_id}" if pairs else f"{RATE_PATH}{token}"


async def rate_home(request: Request) -> Response:
    """The rater's progress and a link to their next pair (or the thanks when none is left)."""
    rater = await _rater(request)

    def progress(store):
        rated = {r.pair_id for r in store.preference_ratings(rater_id=rater.rater_id)}
        return len(rated), store.pairs_for_rater(rater.rater_id, limit=1_000_000)

    rated, left = await _call(request, "read a rater's progress from", progress)
    token = request.path_params["token"]
    return _render(request, "rate.html", rated=rated, left=len(left), total=rated + len(left),
                   next_url=_next_url(token, left) if left else None)


async def rate_pair(request: Request) -> Response:
    """GET: the pair's players and questions. POST: store the answers, then on to the next pair."""
    if request.method == "POST":
        return await _answer(request)
    rater = await _rater(request)
    view = await _view(request, rater)
    return _render(request, "rate_pair.html", view=view, token=request.path_params["token"], chosen={}, message=None)


MAX_FORM_BYTES = 16_384
"""A rating form is a few hundred bytes: twelve rubric names and their answers."""


async def read_form(request: Request) -> dict[str, str]:
    """The posted URL-encoded form (the one kind a plain HTML form sends here), first value per name.
    Its body has a query string's syntax, so Starlette's QueryParams reads it: Request.form() would
    need python-multipart, a dependency for file uploads this form never sends."""
    if not request.headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
        raise HTTPException(400, "Send the rating form as the page's form does (application/x-www-form-urlencoded).")
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            raise HTTPException(413, "That form is far larger than a rating form.")
    form: dict[str, str] = {}
    for name, value in QueryParams(body.decode("utf-8", "replace")).multi_items():
        form.setdefault(name, value)
    return form


def parse_answers(form: dict[str, str], rubrics: tuple[Rubric, ...]) -> tuple[dict[str, int], list[str]]:
    """The answers in shown terms by rubric, and what is wrong with the form (nothing stored unless empty)."""
    answers: dict[str, int] = {}
    problems: list[str] = []
    names = {r.name for r in rubrics}
    for name in form:
        if name in BY_NAME and name not in names:
            problems.append(f"{BY_NAME[name].question!r} is not asked about this recording.")
    for r in rubrics:
        value = form.get(r.name)
        if value is None or value == "":
            problems.append(f"Please answer {r.question!r}")
            continue
        try:
            number = int(str(value))
        except ValueError:
            number = None
        if number is None or not CMOS_MIN <= number <= CMOS_MAX:
            problems.append(f"The answer to {r.question!r} must be one of the scale's seven points.")
        else:
            answers[r.name] = number
    return answers, problems


async def _answer(request: Request) -> Response:
    same_site.require(request)
    form = await read_form(request)
    token = request.path_params["token"]
    try:
        rater = await _rater(request)
        view = await _view(request, rater)
        if view.rated:
            return _render(request, "rate_pair.html", 409, view=view, token=token, chosen={}, message=ALREADY)
        answers, problems = parse_answers(form, view.rubrics)
        if not problems:
            now, first = time.time(), view.pair.shown_first
            rows = [RatingRow(None, rater.rater_id, view.pair.pair_id, name, pair_terms(cmos, first), now, first)
                    for name, cmos in answers.items()]
            try:
                await _call(request, "write ratings to", lambda s: s.add_ratings(rows))
            except AlreadyRated:  # a second submit that raced the first past the check above
                return _render(request, "rate_pair.html", 409, view=view, token=token, chosen={}, message=ALREADY)
            except RatingError as exc:
                problems.append(str(exc))
        if problems:
            return _render(request, "rate_pair.html", 400, view=view, token=token, chosen=answers,
                           message=" ".join(problems))
        left = await _call(request, "read a rater's next pair from", lambda s: s.pairs_for_rater(rater.rater_id, 1))
    except StoreUnavailable as exc:
        log.warning("%s %s: %s", request.method, logged_path(request.url.path), exc.detail)
        kept = [(k, v) for k, v in form.items() if k in BY_NAME]
        return _render(request, "rate_retry.html", 503, kept=kept, message=exc.public)
    return RedirectResponse(_next_url(token, left), status_code=303, headers=PRIVATE)


class AudioFile(FileResponse):
    """A WAV for a rater: no Last-Modified and an ETag that is a digest, never the file's time. A
    file's time would tell the replies `preference generate` wrote (configuration by configuration)
    from the broken audio `preference pairs` wrote for a gold pair. Ranges still work (If-Range by
    the ETag); nothing is cached (no-store)."""

    def __init__(self, path: Path) -> None:
        st = path.stat()
        super().__init__(path, media_type="audio/wav", headers=PRIVATE, stat_result=st)
        del self.headers["last-modified"]
        identity = f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}".encode()
        self.headers["etag"] = '"' + hashlib.sha256(identity).hexdigest()[:32] + '"'

    def _should_use_range(self, http_if_range: str) -> bool:  # Starlette's also compares Last-Modified
        return http_if_range == self.headers["etag"]


def _audio_path(store, pair: PairRow, shown: str) -> str | None:
    """The stored path (under outputs_dir) of what plays `shown` ("first" or "second"): the side's
    output, or the broken audio on a broken gold pair's broken side."""
    side = pair.shown_first if shown == "first" else ("b" if pair.shown_first == "a" else "a")
    if pair.gold == GOLD_BROKEN and side == pair.broken_side:
        return pair.broken_audio_path
    output = store.preference_output(pair.output_a if side == "a" else pair.output_b)
    return output.audio_path if output is not None and output.status == "ok" else None


def _prompt_audio(request: Request, prompt: PromptRow) -> Path:
    """The prompt's WAV from its prompt set (bundled or imported), only the version the pair was made
    from: a set whose pin differs is another set, and its audio is not this prompt's."""
    try:
        prompt_set = request.app.state.prompt_sets.load(prompt.prompt_set, verify=False)
        path = prompt_set.audio_path(prompt_set.prompt(prompt.prompt_id))
    except (KeyError, ValueError, OSError):
        raise HTTPException(404, "This prompt's audio is not on this server.") from None
    if prompt_set.pin != prompt.set_pin or not path.is_file():
        raise HTTPException(404, "This prompt's audio is not on this server.")
    return path


async def rate_audio(request: Request) -> Response:
    """A pair's first or second audio, for a known token, only from inside [preference] outputs_dir."""
    rater = await _rater(request)
    shown = request.path_params["shown"]
    if shown not in SHOWN and shown != PROMPT:
        raise HTTPException(404, "The audio is 'prompt', 'first' or 'second'.")
    view = await _view(request, rater)
    if shown == PROMPT:
        return AudioFile(_prompt_audio(request, view.prompt))
    folder: Path | None = request.app.state.preference_outputs_dir
    relative = await _call(request, "read an output from", lambda s: _audio_path(s, view.pair, shown))
    path = None
    if folder is not None and relative:
        try:
            path = resolve_audio(folder, relative)
        except ValueError:
            log.warning("pair %s: audio path leads outside the outputs folder", view.pair.pair_id)
    if path is None or not path.is_file():
        raise HTTPException(404, "This audio is not on this server.")
    return AudioFile(path)


async def ratings_export(request: Request) -> Response:
    """Every rating with the pair it rates, as CSV or JSONL (ratings_io's lines: rater ids, no token),
    for the operator only (operator.require): the lines unblind the study to a rater who reads them."""
    operator.require(request)
    fmt = request.path_params["fmt"]
    if fmt not in FORMATS:
        raise HTTPException(404, f"the ratings export is ratings.{' or ratings.'.join(FORMATS)}")
    text = await _call(request, "read the ratings from", lambda s: dumps(export_records(s), fmt))
    kind = "text/csv; charset=utf-8" if fmt == "csv" else "application/x-ndjson; charset=utf-8"
    return Response(text, media_type=kind,
                    headers={"Content-Disposition": f'attachment; filename="voxwatch-ratings.{fmt}"'})


routes = [
    Route(RATE_PATH + "{token}", rate_home),
    Route(RATE_PATH + "{token}/pair/{pair_id}", rate_pair, methods=["GET", "POST"]),  # ids read by _pair_id
    Route(RATE_PATH + "{token}/audio/{pair_id}/{shown}.wav", rate_audio),
    Route(EXPORT + "{fmt}", ratings_export),
]
OPERATOR_PREFIXES = (EXPORT,)
"""Operator data under /api/v1: never shared cross-origin (cors.py)."""
UNCACHED_PREFIXES = (RATE_PATH, EXPORT)
"""Paths the page cache passes straight to the app: per rater, a write, or rows the store's version
does not follow (on Postgres it tracks the boards' tables, not the ratings)."""
