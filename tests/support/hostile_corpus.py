"""A generated corpus of hostile input, one Case per probe, for tests/test_hostile_input.py.

Each family is generated from a few lists (sample rates, channel counts, control characters, bad
values per field...), so a new probe is one more list entry. Nothing here is random: the same
corpus every run. Audio is built from a bundled eSpeak clip (real speech, so a case that should
import does) with its header or body damaged on purpose.
"""

from __future__ import annotations

import io
import json
import math
import os
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import soundfile as sf

from voxwatch.foundation.audio import resample
from voxwatch.datasets.catalog import bundled_root

CLIP = bundled_root() / "stt-starter-clean" / "clips" / "u001.wav"
TEXT = "My order number is four five two seven one."


@dataclass(frozen=True)
class Case:
    id: str
    payload: Any
    expect: tuple[str, ...] = ()  # the one-line error holds one of these; () = accepted
    extra: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.id


# ---------------------------------------------------------------- audio files


def speech(rate: int = 16000, channels: int = 1) -> np.ndarray:
    x, r = sf.read(CLIP, dtype="float64")
    y = resample(x, r, rate) if rate != r else x
    return np.stack([y] * channels, axis=1) if channels > 1 else y


def encoded(x: np.ndarray, rate: int, fmt: str = "WAV", subtype: str | None = None) -> bytes:
    buf = io.BytesIO()
    sf.write(buf, x, rate, format=fmt, subtype=subtype)
    return buf.getvalue()


def _chunk(data: bytes, cid: bytes) -> tuple[int, int]:
    """(offset of the chunk's body, its declared size) in a RIFF file."""
    pos = 12
    while pos + 8 <= len(data):
        name, size = struct.unpack("<4sI", data[pos:pos + 8])
        if name == cid:
            return pos + 8, size
        pos += 8 + size + (size & 1)
    raise ValueError(f"no {cid!r} chunk")


def patched_fmt(data: bytes, **fields: int) -> bytes:
    """A WAV with fields of its fmt chunk overwritten (format, channels, rate, byte_rate, align, bits)."""
    out = bytearray(data)
    body, _ = _chunk(data, b"fmt ")
    layout = {"format": (0, "<H"), "channels": (2, "<H"), "rate": (4, "<I"), "byte_rate": (8, "<I"),
              "align": (12, "<H"), "bits": (14, "<H")}
    for name, value in fields.items():
        offset, fmt = layout[name]
        struct.pack_into(fmt, out, body + offset, value)
    return bytes(out)


def with_data_size(data: bytes, size: int) -> bytes:
    out = bytearray(data)
    body, _ = _chunk(data, b"data")
    struct.pack_into("<I", out, body - 4, size)
    return bytes(out)


def cut(data: bytes, fraction: float) -> bytes:
    """The file cut inside its audio, as a half-finished copy leaves it."""
    body, size = _chunk(data, b"data")
    return data[:body + int(size * fraction) // 4 * 4]


def flac_streaminfo(data: bytes, rate: int | None = None, channels: int | None = None,
                    total: int | None = None) -> bytes:
    """A FLAC whose STREAMINFO claims another rate (20 bits), channel count (3) or length (36)."""
    out = bytearray(data)
    at = 8 + 10  # "fLaC", the block header, then min/max block and frame sizes
    v = int.from_bytes(out[at:at + 8], "big")
    if rate is not None:
        v = (v & ~(0xFFFFF << 44)) | (rate << 44)
    if channels is not None:
        v = (v & ~(0x7 << 41)) | ((channels - 1) << 41)
    if total is not None:
        v = (v & ~((1 << 36) - 1)) | total
    out[at:at + 8] = v.to_bytes(8, "big")
    return bytes(out)


RATE_REFUSED = ("sample rate", "cannot read audio")
CHANNELS_REFUSED = ("channels", "cannot read audio")
UNREADABLE = ("cannot read audio", "no samples", "inconsistent WAV header")
TRUNCATED = ("truncated",)
NOT_WAV_OR_FLAC = ("expected WAV or FLAC",)


def audio_cases() -> list[Case]:
    """(file name, bytes) payloads: each imported alone under a plain manifest."""
    wav = encoded(speech(), 16000, subtype="PCM_16")
    flac = encoded(speech(), 16000, fmt="FLAC")
    cases = []
    for rate in (1, 2, 100, 1000, 4000, 7999, 192001, 384000, 1_000_000, 2**31 - 1, 2**32 - 1):
        cases.append(Case(f"wav-rate-{rate}", ("a.wav", patched_fmt(wav, rate=rate, byte_rate=(rate * 2) % 2**32)),
                          RATE_REFUSED))
    for channels in (0, 33, 64, 255, 65535):
        cases.append(Case(f"wav-channels-{channels}", ("a.wav", patched_fmt(wav, channels=channels)), CHANNELS_REFUSED))
    for bits in (0, 1, 7, 12, 64, 65535):
        cases.append(Case(f"wav-bits-{bits}", ("a.wav", patched_fmt(wav, bits=bits)), UNREADABLE))
    for tag in (0, 0x55, 0x2000, 0xFFFF):
        cases.append(Case(f"wav-format-tag-{tag:#x}", ("a.wav", patched_fmt(wav, format=tag)), UNREADABLE))
    for fraction in (0.05, 0.25, 0.5, 0.75, 0.99):
        cases.append(Case(f"wav-cut-at-{fraction}", ("a.wav", cut(wav, fraction)), TRUNCATED))
    cases.append(Case("wav-one-byte-short", ("a.wav", wav[:-1]), TRUNCATED))
    for size in (0xFFFFFFFF, 0x7FFFFFFF, len(wav)):
        cases.append(Case(f"wav-data-size-{size:#x}", ("a.wav", with_data_size(wav, size)), TRUNCATED))
    cases.append(Case("wav-header-only", ("a.wav", with_data_size(wav[:44], 0)), UNREADABLE))
    for name, junk in (("empty", b""), ("one-byte", b"R"), ("zeros", bytes(44)),
                       ("noise", np.random.default_rng(7).integers(0, 256, 1024, dtype=np.uint8).tobytes()),
                       ("riff-then-noise", b"RIFF\xff\xff\xff\x7fWAVE" + bytes(range(256)) * 4),
                       ("text", b"this is not audio\n" * 20)):
        cases.append(Case(f"junk-{name}", ("a.wav", junk), UNREADABLE))
    cases += [
        Case("flac-valid", ("a.flac", flac)),
        Case("flac-cut-at-half", ("a.flac", flac[:len(flac) // 2]), TRUNCATED + ("cannot read audio",)),
        Case("flac-claims-19-hours", ("a.flac", flac_streaminfo(flac, total=(1 << 36) - 1)), ("at most 600 s",)),
        Case("flac-claims-1-hz", ("a.flac", flac_streaminfo(flac, rate=1)), RATE_REFUSED),
        Case("flac-claims-8ch-192khz-600s", ("a.flac", flac_streaminfo(flac, rate=192000, channels=8, total=600 * 192000)),
             ("samples to decode at once",)),
    ]
    for fmt in ("AIFF", "OGG", "AU", "CAF", "W64"):
        cases.append(Case(f"format-{fmt.lower()}", (f"a.{fmt.lower()}", encoded(speech(), 16000, fmt=fmt)),
                          NOT_WAV_OR_FLAC))
    cases += [
        Case("valid-8khz-mono", ("a.wav", encoded(speech(8000), 8000, subtype="PCM_16"))),
        Case("valid-44k1-stereo", ("a.wav", encoded(speech(44100, 2), 44100, subtype="PCM_16"))),
        Case("valid-48k-24bit", ("a.wav", encoded(speech(48000), 48000, subtype="PCM_24"))),
        Case("valid-22k05-float", ("a.wav", encoded(speech(22050), 22050, subtype="FLOAT"))),
        Case("valid-96k-4ch", ("a.wav", encoded(speech(96000, 4), 96000, subtype="PCM_16"))),
        Case("wav-601-seconds", ("a.wav", encoded(np.zeros(601 * 8000), 8000, subtype="PCM_U8")), ("at most 600 s",)),
        Case("truncated-allowed-0.75", ("a.wav", cut(wav, 0.75)), extra={"args": ["--allow-truncated"], "truncated": True}),
        Case("truncated-allowed-one-byte", ("a.wav", wav[:-1]), extra={"args": ["--allow-truncated"], "truncated": True}),
    ]
    return cases


# ---------------------------------------------------------------- manifests and import folders

CONTROL = ["\x00", "\x01", "\x07", "\x08", "\x0b", "\x0c", "\x1b", "\x1f", "\x7f", "\x80", "\x85", "\x9f", "\t", "\n",
           "\r", "\ud800", "\udfff"]
"""Every kind a text can hide: NUL, C0 (bell, backspace, escape...), DEL, C1, the whitespace controls
and lone surrogates."""

Folder = Callable[[Path, Path], dict]
"""build(source folder, a scratch folder) -> overrides: args, catalog."""


def _line(id: Any = "a", path: Any = "a.wav", text: Any = TEXT, **more: Any) -> dict:
    return {"id": id, "path": path, "text": text, **more}


def _write(src: Path, records: list[dict] | bytes, files: dict[str, bytes] | None = None) -> None:
    src.mkdir(parents=True, exist_ok=True)
    for name, data in ({"a.wav": CLIP.read_bytes()} if files is None else files).items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_bytes(data)
    manifest = records if isinstance(records, bytes) else "".join(json.dumps(r) + "\n" for r in records).encode()
    (src / "manifest.jsonl").write_bytes(manifest)


def _manifest(records: list[dict] | bytes, files: dict[str, bytes] | None = None) -> Folder:
    def build(src: Path, scratch: Path) -> dict:
        _write(src, records, files)
        return {}
    return build


def _two(a: str, b: str) -> Folder:
    return _manifest([_line(a, "a.wav"), _line(b, "b.wav")], {"a.wav": CLIP.read_bytes(), "b.wav": CLIP.read_bytes()})


def _symlinked(target: Callable[[Path, Path], Path], link: str = "a.wav", path: str | None = None) -> Folder:
    """A manifest naming `path` (default: the link itself), with `link` a symlink to target(src, scratch)."""
    def build(src: Path, scratch: Path) -> dict:
        _write(src, [_line(path=path or link)], {})
        os.symlink(target(src, scratch), src / link)
        return {}
    return build


def _outside(src: Path, scratch: Path) -> Path:
    secret = scratch / "outside" / "secret.wav"
    secret.parent.mkdir(parents=True, exist_ok=True)
    secret.write_bytes(CLIP.read_bytes())
    return secret


def _inside(src: Path, scratch: Path) -> Path:
    (src / "real").mkdir()
    (src / "real" / "a.wav").write_bytes(CLIP.read_bytes())
    return src / "real" / "a.wav"


def _loop(src: Path, scratch: Path) -> Path:
    os.symlink(src / "a.wav", src / "b.wav")
    return src / "b.wav"


def _manifest_elsewhere(src: Path, scratch: Path) -> dict:
    _write(src, [_line()])
    (src / "manifest.jsonl").unlink()
    elsewhere = scratch / "elsewhere.jsonl"
    elsewhere.write_text(json.dumps(_line()) + "\n")
    os.symlink(elsewhere, src / "manifest.jsonl")
    return {}


def _existing_folder(src: Path, scratch: Path) -> dict:
    _write(src, [_line()])
    (scratch / "catalog" / "hostile").mkdir(parents=True)
    (scratch / "catalog" / "hostile" / "notes.txt").write_text("someone's files")
    return {}


def _datasets_dir_under_a_file(src: Path, scratch: Path) -> dict:
    _write(src, [_line()])
    (scratch / "a-file").write_text("not a folder")
    return {"catalog": scratch / "a-file" / "datasets"}


def _name(name: str) -> Folder:
    def build(src: Path, scratch: Path) -> dict:
        _write(src, [_line()])
        return {"name": name}
    return build


def _no_manifest(src: Path, scratch: Path) -> dict:
    src.mkdir(parents=True)
    return {}


def _manifest_is_a_folder(src: Path, scratch: Path) -> dict:
    (src / "manifest.jsonl").mkdir(parents=True)
    return {}


def _source_loop(src: Path, scratch: Path) -> dict:
    os.symlink(src, src)
    return {}


def manifest_cases() -> list[Case]:
    """Folder builders; an accepted case imports one clip (or two) of real speech."""
    cases = []
    for ch in CONTROL:
        tag = f"{ord(ch):#06x}"
        cases.append(Case(f"text-with-{tag}", _manifest([_line(text=f"order {ch}number")]), ("control characters",)))
    for ch in ("\x00", "\n", "\x1b", "\ud800"):
        tag = f"{ord(ch):#06x}"
        cases.append(Case(f"id-with-{tag}", _manifest([_line(id=f"c{ch}1")]), ("control characters",)))
        cases.append(Case(f"speaker-with-{tag}", _manifest([_line(speaker=f"sp{ch}")]), ("control characters",)))
    cases.append(Case("path-with-nul", _manifest([_line(path="a.wav\x00.txt")]), ("control characters",)))
    for a, b in (("c/1", "c:1"), ("C1", "c1"), ("a b", "a_b"), ("x?", "x*"), ("\u00e9", "_"), ("dup", "dup"),
                 ("ü/ß", "___")):
        cases.append(Case(f"ids-collide-{a}-{b}", _two(a, b), ("name the same file", "duplicate id")))
    for bad_id, why in (("", "missing or empty id"), ("   ", "missing or empty id"), (42, "missing or empty id"),
                        (None, "missing or empty id"), ("x" * 129, "at most 128")):
        cases.append(Case(f"id-{why.split()[-1]}-{str(bad_id)[:6]!r}", _manifest([_line(id=bad_id)]), (why,)))
    cases.append(Case("text-empty", _manifest([_line(text="  ")]), ("missing or empty text",)))
    cases.append(Case("text-not-a-string", _manifest([_line(text=["a"])]), ("missing or empty text",)))
    cases.append(Case("speaker-not-a-string", _manifest([_line(speaker=7)]), ("speaker must be a string",)))
    for path in ("../a.wav", "sub/../../a.wav", "sub/../a.wav", "..", "/etc/passwd", "//etc/passwd"):
        cases.append(Case(f"path-{path}", _manifest([_line(path=path)], {"a.wav": CLIP.read_bytes(), "sub/x": b""}),
                          ("without '..'",)))
    cases += [
        Case("path-symlink-to-outside", _symlinked(_outside), ("leads outside DIR",)),
        Case("path-symlink-dir-to-outside", _symlinked(lambda s, t: _outside(s, t).parent, "d", "d/secret.wav"),
             ("leads outside DIR",)),
        Case("path-symlink-loop", _symlinked(_loop), ("cannot resolve",)),
        Case("path-missing-file", _manifest([_line(path="nope.wav")]), ("no such file",)),
        Case("path-is-a-folder", _manifest([_line(path="sub")], {"sub/x.wav": CLIP.read_bytes()}), ("no such file",)),
        Case("manifest-symlink-to-outside", _manifest_elsewhere, ("leads outside DIR",)),
        Case("manifest-not-utf8", _manifest(b'{"id": "a", "path": "a.wav", "text": "caf\xe9"}\n'), ("not UTF-8",)),
        Case("manifest-utf16", _manifest(json.dumps(_line()).encode("utf-16")), ("not UTF-8",)),
        Case("manifest-not-json", _manifest(b"{id: a}\n"), ("not JSON",)),
        Case("manifest-raw-control-in-string", _manifest(b'{"id": "a", "path": "a.wav", "text": "a\x01b"}\n'),
             ("not JSON",)),
        Case("manifest-array-line", _manifest(b'["a", "a.wav", "text"]\n'), ("expected a JSON object",)),
        Case("manifest-deep-nesting", _manifest(b"[" * 100000 + b"]" * 100000 + b"\n"), ("not JSON",)),
        Case("manifest-huge-number", _manifest(b'{"id": ' + b"9" * 5000 + b"}\n"), ("not JSON",)),
        Case("manifest-empty", _manifest(b"\n\n"), ("no clips",)),
        Case("manifest-missing", _no_manifest, ("not found",)),
        Case("manifest-is-a-folder", _manifest_is_a_folder, ("not found",)),
        Case("source-symlink-loop", _source_loop, ("cannot resolve", "not found")),
        Case("dataset-folder-exists-not-empty", _existing_folder, ("already exists",)),
        Case("datasets-dir-unwritable", _datasets_dir_under_a_file, ("cannot write to the datasets folder",)),
        Case("name-traversal", _name("../escape"), ("dataset name",)),
        Case("name-upper-case", _name("Hostile"), ("dataset name",)),
        Case("name-with-slash", _name("a/b"), ("dataset name",)),
        # what must keep working
        Case("ok-id-with-slash", _manifest([_line(id="calls/2024/001")])),
        Case("ok-unicode-text", _manifest([_line(text="Caf\u00e9 \u00fcber \u05e9\u05dc\u05d5\u05dd \U0001f600")])),
        Case("ok-subfolder-path", _manifest([_line(path="sub/a.wav")], {"sub/a.wav": CLIP.read_bytes()})),
        Case("ok-symlink-inside", _symlinked(_inside, "link.wav")),
        Case("ok-two-distinct-ids", _two("c-1", "c_2")),
    ]
    return cases


# ---------------------------------------------------------------- configuration and options

FLOAT_KEYS = [("run", "timeout_s"), ("run", "max_retry_after_s"), ("run", "backoff_s"), ("alerts", "recent_hours"),
              ("alerts", "delivery_timeout_s")]
BAD_FLOATS = [("nan", "nan"), ("inf", "inf"), ("-inf", "-inf"), ("0", "0.0"), ("-1", "-1.0"), ("1e10", "1e10")]


def config_cases() -> list[Case]:
    """("toml", text) or ("env", {variable: value}) payloads; each one line naming where and what."""
    cases = []
    for section, key in FLOAT_KEYS:
        for label, literal in BAD_FLOATS:
            cases.append(Case(f"toml-{section}.{key}={label}", ("toml", f"[{section}]\n{key} = {literal}\n"),
                              (f"[{section}] {key} = ", "expected a positive finite number")))
    for var, value in (("VOXWATCH_RUN_TIMEOUT_S", "nan"), ("VOXWATCH_RUN_TIMEOUT_S", "inf"),
                       ("VOXWATCH_RUN_BACKOFF_S", "-0"), ("VOXWATCH_ALERTS_P_VALUE", "nan"),
                       ("VOXWATCH_ALERTS_WER_P_VALUE", "1"), ("VOXWATCH_RUN_SEED", "-2"),
                       ("VOXWATCH_RUN_SEED", str(10**41)), ("VOXWATCH_RUN_SEED", str(2**63)),
                       ("VOXWATCH_RUN_SAMPLE_SIZE", "0"), ("VOXWATCH_RUN_SAMPLE_SIZE", str(2**31)),
                       ("VOXWATCH_RUN_SAMPLE_SIZE", "ten"), ("VOXWATCH_RUN_CHUNK_MS", "1e3"),
                       ("VOXWATCH_WORKER_REGION", "eu west"), ("VOXWATCH_WORKER_REGION", "eu/../west"),
                       ("VOXWATCH_STORE_URL", "mysql://x"), ("VOXWATCH_ALERTS_INCLUDE_EMULATOR", "no")):
        cases.append(Case(f"env-{var}={value[:12]}", ("env", {var: value}), (f"environment {var}: ",)))
    for literal in ("-2", "-5", str(2**63), str(10**41), "1.5", "true", '"7"'):
        cases.append(Case(f"toml-seed={literal[:12]}", ("toml", f"[run]\nseed = {literal}\n"), ("[run] seed = ",)))
    for literal in ("0", "-1", str(2**31), "2.5", "false", '"ten"'):
        cases.append(Case(f"toml-sample_size={literal[:12]}", ("toml", f"[run]\nsample_size = {literal}\n"),
                          ("[run] sample_size = ",)))
    cases += [
        Case("toml-region-with-space", ("toml", '[worker]\nregion = "eu west"\n'), ("[worker] region = ",)),
        Case("toml-store-url-with-nul", ("toml", '[store]\nurl = "sqlite:///a\\u0000b"\n'), ("control characters",)),
        Case("toml-datasets-dir-with-escape", ("toml", '[datasets]\ndir = "var/\\u001b[2J"\n'), ("control characters",)),
        Case("toml-not-utf8", ("toml-bytes", b"[run]\nsample_size = 3 # caf\xe9\n"), ("not UTF-8 (line 2)",)),
        Case("toml-utf16", ("toml-bytes", "[run]\nsample_size = 3\n".encode("utf-16")), ("not UTF-8",)),
        Case("toml-not-toml", ("toml", "[run\n"), ("not valid TOML",)),
    ]
    for var, near in (("VOXWATCH_RUN_SAMPLESIZE", "VOXWATCH_RUN_SAMPLE_SIZE"), ("VOXWATCH_STORE_URI", "VOXWATCH_STORE_URL"),
                      ("VOXWATCH_WORKER_REGIONS", "VOXWATCH_WORKER_REGION"), ("VOXWATCH_RUN_TIMEOUT", "VOXWATCH_RUN_TIMEOUT_S"),
                      ("VOXWATCH_BROKER_URl", "VOXWATCH_BROKER_URL"), ("VOXWATCH_CONFIG_FILE", "VOXWATCH_CONFIG"),
                      ("VOXWATCH_DATASET_DIR", "VOXWATCH_DATASETS_DIR"), ("VOXWATCH_STORE_SPOOL", "VOXWATCH_STORE_SPOOL_DIR"),
                      ("VOXWATCH_SEED", None), ("VOXWATCH_", None)):
        cases.append(Case(f"env-unknown-{var}", ("env", {var: "3"}),
                          (f"environment {var}: unknown variable" + (f" (did you mean {near}?" if near else ""),)))
    for var, value in (("VOXWATCH_BROKER_SOFT_TIME_LIMIT_S", "5000"), ("VOXWATCH_BROKER_TIME_LIMIT_S", "100"),
                       ("VOXWATCH_BROKER_VISIBILITY_TIMEOUT_S", "60")):
        cases.append(Case(f"env-broker-{var}", ("env", {var: value}), (f"environment {var}: [broker] needs",)))
    cases.append(Case("env-known-variables-accepted", ("env", {"VOXWATCH_DEEPGRAM_API_KEY": "k", "VOXWATCH_TODAY": "2026-12-01",
                                                                "VOXWATCH_PG_READER": "grafana", "VOXWATCH_ACME_BASE_URL": "http://127.0.0.1:9/acme"})))
    return cases


def option_cases() -> list[Case]:
    """Command lines: one line on stderr, exit 2, the same words as the config key's check."""
    cases = []
    for command in (["run"], ["tick"]):
        for value in ("-5", "-2", str(10**41), str(2**63), "abc", "1.5"):
            cases.append(Case(f"{command[0]}-seed-{value[:12]}", [*command, "--seed", value],
                              ("argument --seed", "(as [run] seed)") if value not in ("abc", "1.5") else ("argument --seed",)))
        for value in ("0", "-1", str(2**31), "abc"):
            cases.append(Case(f"{command[0]}-sample-size-{value[:12]}", [*command, "--sample-size", value],
                              ("argument --sample-size",)))
    cases += [
        Case("serve-port-0", ["serve", "--port", "0"], ("argument --port",)),
        Case("serve-port-70000", ["serve", "--port", "70000"], ("argument --port",)),
        Case("worker-region-space", ["worker", "--region", "eu west"], ("argument --region",)),
        Case("worker-concurrency-0", ["worker", "--concurrency", "0"], ("argument --concurrency",)),
        Case("store-url-scheme", ["leaderboard", "--store", "mysql://x"], ("expected sqlite",)),
        Case("unknown-option", ["run", "--sample-sise", "3"], ("unrecognized arguments",)),
    ]
    return cases


# ---------------------------------------------------------------- exported rows for ingest


def row(**over: Any) -> dict:
    base = {"run_id": "r1", "model_id": "pocketsphinx/en-us@5.1.1", "dataset": "stt-starter-clean", "clip_id": "u001",
            "attempt": 1, "board": "stt", "vendor": "pocketsphinx", "protocol": "stt-stream", "region": "local",
            "started_at": 1.7e9, "status": "ok", "emulator": False, "ttfs_ms": 300.0, "method_version": "5",
            "hypothesis": "my order number", "reference": TEXT, "substitutions": 0, "deletions": 0, "insertions": 0,
            "ref_words": 9}
    base.update(over)
    return {k: v for k, v in base.items() if v is not _DROP}


_DROP = object()
FLOAT_FIELDS = ["connect_ms", "ttfs_ms", "first_partial_ms", "first_partial_from_t0_ms", "latency_ms", "rtf", "ttfa_ms",
                "ttfb_ms", "leading_silence_ms", "synthesis_ms", "v2v_ms", "audio_duration_s", "pacing_error_ms",
                "retry_after_s", "started_at"]
BAD_NUMBERS = ["abc", math.nan, math.inf, -math.inf, True, [1], {"ms": 1}, "1e400"]


def _raw(*records: Any) -> bytes:
    """JSONL as Python's json writes it: NaN and Infinity as the bare words a hand-edited file may hold."""
    return b"".join((r if isinstance(r, bytes) else json.dumps(r).encode()) + b"\n" for r in records)


def rows_cases() -> list[Case]:
    """JSONL payloads for `voxwatch ingest`; a refused one names its line and field and ingests nothing."""
    cases = []
    for i, name in enumerate(FLOAT_FIELDS):
        bad = BAD_NUMBERS[i % len(BAD_NUMBERS)]
        bad = 1e400 if bad == "1e400" else bad  # json.loads reads 1e400 as inf
        cases.append(Case(f"float-{name}-{str(bad)[:8]}", _raw(row(), row(clip_id="u002", **{name: bad})),
                          (f":2: not an observation row: {name}: ",)))
    for name, bad in (("attempt", "1"), ("attempt", 1.5), ("attempt", True), ("attempt", 0), ("attempt", 2**63),
                      ("seed", 10**41), ("seed", -2**63 - 1), ("seed", "7"), ("substitutions", -1), ("ref_words", 2.0),
                      ("deletions", "x"), ("insertions", False)):
        cases.append(Case(f"int-{name}-{str(bad)[:10]}", _raw(row(**{name: bad})), (f":1: not an observation row: {name}: ",)))
    for name, bad in (("emulator", "no"), ("emulator", 0), ("emulator", 1), ("emulator", "false"), ("emulator", None),
                      ("connection_reused", "yes"), ("connection_reused", 1)):
        cases.append(Case(f"bool-{name}-{bad!r}", _raw(row(**{name: bad})), (f":1: not an observation row: {name}: ",)))
    for name, bad in (("status", "bogus"), ("status", "OK"), ("status", ""), ("status", None), ("board", "xyz"),
                      ("run_id", 5), ("model_id", None), ("clip_id", ""), ("clip_id", "  "), ("hypothesis", 42),
                      ("reason", ["a"]), ("vad_params", {"a": 1})):
        cases.append(Case(f"text-{name}-{str(bad)[:8]!r}", _raw(row(**{name: bad})), (f":1: not an observation row: {name}: ",)))
    cases += [
        Case("unknown-field", _raw(row(ttfs_msec=3.0)), ("unknown field(s) 'ttfs_msec'",)),
        Case("missing-required-field", _raw(row(status=_DROP)), ("missing field(s) status",)),
        Case("line-is-an-array", _raw([1, 2]), ("expected a JSON object",)),
        Case("line-is-a-string", _raw("row"), ("expected a JSON object",)),
        Case("line-not-json", _raw(row(), b"{'run_id': 'r1'}"), (":2: not JSON",)),
        Case("line-cut-short", _raw(row(), json.dumps(row(clip_id="u9")).encode()[:40]), (":2: not JSON",)),
        Case("line-not-utf8", _raw(row(), b'{"run_id": "r\xff"}'), (":2: not UTF-8",)),
        Case("line-deep-nesting", _raw(b"[" * 100000 + b"]" * 100000), (":1: not",)),
        Case("line-huge-number", _raw(b'{"attempt": ' + b"9" * 5000 + b"}"), (":1: not",)),
        Case("bad-line-after-good-ones", _raw(*[row(clip_id=f"u{i:03}") for i in range(1, 6)], row(status="bogus")),
             (":6: not an observation row: status: ",)),
        Case("several-bad-lines", _raw(row(status="x"), row(emulator="no"), row(ttfs_ms="abc")),
             (":1: not an observation row: status: expected one of 'ok', ",), extra={"also": "(3 bad lines in all)"}),
    ]
    for ch in ("\x00", "\x1b", "\ud800", "\x85"):  # an old spool's text: made safe, as when measured
        tag = f"{ord(ch):#06x}"
        cases.append(Case(f"accepted-hypothesis-with-{tag}", _raw(row(run_id=f"safe-{tag}", hypothesis=f"my{ch} order")),
                          extra={"field": "hypothesis", "stored": "my order" if ch != "\ud800" else "my\ufffd order"}))
    cases.append(Case("accepted-reason-with-nul", _raw(row(run_id="safe-reason", status="error", ttfs_ms=None,
                                                              reason="server said \x00\x00 boom")),
                      extra={"field": "reason", "stored": "server said  boom"}))
    cases.append(Case("accepted-old-row-without-new-fields", _raw(row(run_id="safe-old", connection_reused=_DROP,
                                                                        method_version=_DROP)),
                      extra={"field": "method_version", "stored": ""}))
    return cases


# ---------------------------------------------------------------- a provider's text

PROVIDER_TEXTS = ["hello\x00world", "\x00", "bell\x07 and backspace\x08", "escape \x1b[31mred\x1b[0m",
                  "line\nbreak\r\nand\ttab", "del\x7f", "c1 \x80\x85\x9f", "lone \ud800 surrogate", "\udfff",
                  "<script>alert(1)</script>\x00", "'; DROP TABLE observations; --\x00", "\u202eevil bidi\u202c",
                  "nul at end\x00", "\x00" * 64, "caf\u00e9 \U0001f600"]
"""Hypotheses and error messages a provider (or a hostile proxy) could send."""
