"""`voxwatch preference generate`: every configuration answers every prompt of a set, once.

Each (prompt, configuration) not yet stored is answered (answer.py) and stored as one
preference_outputs row: the final audio as a WAV under [preference] outputs_dir (the row holds
its path relative to that folder and its sha256) and the side streams; or, when it failed, its
status and reason (every key scrubbed). A stored output is skipped, so a rerun only fills the
gaps; a failed one is answered again only with `retry_failed` (its row is then replaced and its
attempts counted). A configuration whose key is not set is skipped and said so, not stored as a
failure of the model. Rows of an emulator-backed adapter are flagged `emulator`.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from voxwatch.foundation.audio import write_wav
from voxwatch.datasets.manifest import file_stem
from voxwatch.foundation.integrity import file_sha256
from voxwatch.providers.keys import key_variable, model_secrets, scrub
from voxwatch.providers.preference_configs import PreferenceConfig
from voxwatch.providers.registry import Registry
from voxwatch.foundation.text import safe_text
from voxwatch.harness.measure import failure_of

from voxwatch.preference.answer import Answer, answer, prompt_audio, side_streams, voiced
from voxwatch.preference.prompts import Prompt, PromptSet
from voxwatch.store.preference_rows import OutputRow, PromptRow

NO_REPLY = "no finished reply within the time limit"
REASON_CHARS = 500


@dataclass(frozen=True)
class GenerateSettings:
    outputs_dir: Path
    chunk_ms: int = 20
    timeout_s: float = 30.0
    retry_failed: bool = False


@dataclass
class Generated:
    stored: int = 0
    failed: int = 0
    skipped: int = 0  # already stored
    no_key: list[str] = field(default_factory=list)  # configurations skipped for want of a key


def prompt_rows(ps: PromptSet) -> list[PromptRow]:
    return [PromptRow(ps.name, p.id, ps.pin, p.sha256, p.text, p.category, p.difficulty, p.condition,
                      json.dumps(list(p.tags)), ps.info.synthesized) for p in ps.prompts]


def audio_path(prompt_set: str, config_id: str, prompt_id: str) -> str:
    """Where an output's WAV goes, relative to outputs_dir: one folder per set and configuration."""
    return f"{file_stem(prompt_set)}/{file_stem(config_id)}/{file_stem(prompt_id)}.wav"


def resolve_audio(outputs_dir: Path, relative: str) -> Path:
    """A stored audio path as a file under outputs_dir; a path that would leave it is refused."""
    path = (outputs_dir / relative).resolve()
    if not path.is_relative_to(outputs_dir.resolve()):
        raise ValueError(f"audio path {relative!r} leads outside {outputs_dir}")
    return path


def _row(ps: PromptSet, prompt: Prompt, config: PreferenceConfig, emulator: bool) -> OutputRow:
    return OutputRow(None, ps.name, prompt.id, config.id, config.model, config.thinking, config.voice, "ok", "",
                     time.time(), emulator=emulator)


def _stored(row: OutputRow, result: Answer, outputs_dir: Path) -> OutputRow:
    relative = audio_path(row.prompt_set, row.config_id, row.prompt_id)
    path = outputs_dir / relative
    write_wav(path, result.audio, result.sample_rate)
    row.audio_path, row.audio_sha256 = relative, file_sha256(path)
    row.duration_s = round(result.audio.size / result.sample_rate, 3)
    row.transcript = safe_text(result.turn.transcript)
    row.caller_transcript = None if result.turn.caller_transcript is None else safe_text(result.turn.caller_transcript)
    row.side = side_streams(result)
    if result.audio.size == 0:
        row.status, row.reason = "no_audio", "the reply ended without audio"
    return row


def generate(store, registry: Registry, ps: PromptSet, configs: list[PreferenceConfig],
             settings: GenerateSettings, log: Callable[[str], None] = print) -> Generated:
    done = Generated()
    store.add_prompts(prompt_rows(ps))
    have = {(o.prompt_id, o.config_id): o.status for o in store.preference_outputs(ps.name)}
    audio = {p.id: prompt_audio(ps, p) for p in ps.prompts}
    for config in configs:
        model = registry.resolve(config.model)
        todo = [p for p in ps.prompts if (p.id, config.id) not in have
                or (settings.retry_failed and have[(p.id, config.id)] != "ok")]
        done.skipped += len(ps.prompts) - len(todo)
        if not todo:
            continue
        if not model.key_is_set():
            done.no_key.append(config.id)
            log(f"{config.id}: skipped, its key is not set ({key_variable(model.vendor)})")
            continue
        secrets = list(model_secrets(model))
        adapter = voiced(registry.create(model), config.voice)
        emulator = bool(getattr(adapter, "emulator", False))
        try:
            for prompt in todo:
                row = _row(ps, prompt, config, emulator)
                try:
                    result = asyncio.run(answer(adapter, config, audio[prompt.id], prompt, settings.chunk_ms,
                                                settings.timeout_s))
                    row = _stored(row, result, settings.outputs_dir)
                except Exception as exc:  # noqa: BLE001 - a failed output is a row with its reason
                    status, reason = failure_of(exc, model.vendor, NO_REPLY)
                    row.status, row.reason = status, scrub(reason, secrets)[:REASON_CHARS]
                store.put_output(row)
                if row.status == "ok":
                    done.stored += 1
                else:
                    done.failed += 1
                log(f"{config.id} {prompt.id}: {row.status}" + (f" ({row.reason})" if row.reason else "")
                    + (" [emulator]" if emulator else ""))
        finally:
            getattr(adapter, "close", lambda: None)()
    return done
