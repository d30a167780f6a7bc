"""WER and speed of the embedded default's engines: `python -m benchmarks.local_engines`.

On the bundled stt-starter-clean and stt-starter-phonecodec sets and, when ../shared/data/speech
is present beside the checkout (or VOXWATCH_SPEECH_DIR names it), on real human speech grouped
by subset. Whisper tiny.en is timed per clip (real-time factor = decode time / audio duration);
pocketsphinx decodes each clip as fast as it can (offline, unpaced), so its figure is accuracy
and decode speed, not streaming latency. With --streaming, the streaming Whisper's method
(faster-whisper/tiny.en-streaming: LocalAgreement-2 on a growing buffer re-decoded every second of
audio) is run on each clip the same way, unpaced: its WER and its decode time per second of audio.
Target: Whisper tiny.en decodes every corpus faster than real time (RTF < 1,
`whisper_real_time_target_met`): the embedded default transcribes as the audio comes. `--quick`: the
first clip of each bundled set, no real speech (seconds; the same code path). Prints a table; the
last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from benchmarks.speech_files import read_mono
from voxwatch.foundation.audio import CATALOG_RATE, normalize_loudness, resample, to_pcm16
from voxwatch.datasets.catalog import Catalog, bundled_root
from voxwatch.metrics.wer import WordErrors, pooled_wer, word_errors
from voxwatch.providers.local.whisper_streaming_stt import GrowingBuffer
from voxwatch.providers.local.whisper_stt import WhisperTiny

REPO = Path(__file__).resolve().parents[1]


def speech_dir() -> Path | None:
    path = Path(os.environ.get("VOXWATCH_SPEECH_DIR", REPO.parent / "shared" / "data" / "speech"))
    return path if (path / "manifest.jsonl").is_file() else None


def pocketsphinx_decoder():
    from pocketsphinx import Decoder

    return Decoder(samprate=CATALOG_RATE, loglevel="FATAL")


def decode_pocketsphinx(decoder, pcm: np.ndarray) -> str:
    decoder.start_utt()
    decoder.process_raw(pcm.tobytes(), False, True)
    decoder.end_utt()
    hyp = decoder.hyp()
    return hyp.hypstr if hyp is not None else ""


def decode_streaming(whisper: WhisperTiny, x: np.ndarray) -> str:
    """The streaming method on one clip, fed in 20 ms chunks as fast as it decodes."""
    buffer = GrowingBuffer(whisper)
    pcm = to_pcm16(x).tobytes()
    for i in range(0, len(pcm), 640):
        buffer.add(pcm[i:i + 640])
        if buffer.due():
            buffer.step()
    return buffer.finish()


def corpora(limit_real: int, limit_bundled: int | None = None) -> dict[str, list[tuple[str, np.ndarray]]]:
    """name -> [(reference, float audio at 16 kHz)]: the bundled sets' first `limit_bundled` clips (None:
    all) and up to `limit_real` real clips (0: none)."""
    catalog = Catalog([bundled_root()])
    sets: dict[str, list[tuple[str, np.ndarray]]] = {}
    for name in ("stt-starter-clean", "stt-starter-phonecodec"):
        ds = catalog.load(name)
        sets[name] = [(c.text, ds.audio(c) / 32768.0) for c in ds.clips[:limit_bundled]]
    root = speech_dir()
    if root is not None and limit_real > 0:
        by_subset: dict[str, list] = defaultdict(list)
        for line in (root / "manifest.jsonl").read_text().splitlines()[:limit_real]:
            item = json.loads(line)
            x, rate = read_mono(root / item["path"])
            subset = "real/" + item["subset"].split("_single")[0].split("_audiobook")[0].split("_64")[0]
            by_subset[subset].append((item["text"], normalize_loudness(resample(x, rate, CATALOG_RATE))))
        sets.update(sorted(by_subset.items()))
    return sets


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--limit-real", type=int, default=1000, help="at most this many real clips")
    parser.add_argument("--no-pocketsphinx", action="store_true")
    parser.add_argument("--streaming", action="store_true", help="also the streaming Whisper's method")
    parser.add_argument("--quick", action="store_true", help="1 clip of each bundled set, no real speech (seconds)")
    args = parser.parse_args()
    if args.quick:
        args.limit_real = 0
    whisper = WhisperTiny.get()
    decoder = None if args.no_pocketsphinx else pocketsphinx_decoder()
    results = {}
    print(f"{'corpus':40} {'clips':>5} {'audio s':>8} {'whisper WER':>12} {'whisper RTF':>12} {'sphinx WER':>11} {'sphinx RTF':>11}")
    for name, items in corpora(args.limit_real, 1 if args.quick else None).items():
        w_parts: list[WordErrors] = []
        p_parts: list[WordErrors] = []
        s_parts: list[WordErrors] = []
        w_time = p_time = s_time = audio_s = 0.0
        for text, x in items:
            audio_s += x.size / CATALOG_RATE
            start = time.perf_counter()
            hyp = whisper.transcribe(x.astype(np.float32))
            w_time += time.perf_counter() - start
            w_parts.append(word_errors(text, hyp))
            if decoder is not None:
                start = time.perf_counter()
                hyp = decode_pocketsphinx(decoder, to_pcm16(x))
                p_time += time.perf_counter() - start
                p_parts.append(word_errors(text, hyp))
            if args.streaming:
                start = time.perf_counter()
                hyp = decode_streaming(whisper, x.astype(np.float32))
                s_time += time.perf_counter() - start
                s_parts.append(word_errors(text, hyp))
        row = {"clips": len(items), "audio_s": round(audio_s, 1), "whisper_wer": round(pooled_wer(w_parts), 4),
               "whisper_rtf": round(w_time / audio_s, 4)}
        if decoder is not None:
            row.update(pocketsphinx_wer=round(pooled_wer(p_parts), 4), pocketsphinx_rtf=round(p_time / audio_s, 4))
        if args.streaming:
            row.update(streaming_wer=round(pooled_wer(s_parts), 4), streaming_rtf=round(s_time / audio_s, 4))
        results[name] = row
        print(f"{name:40} {row['clips']:5d} {row['audio_s']:8.1f} {100 * row['whisper_wer']:11.1f}% "
              f"{row['whisper_rtf']:12.3f} " + (f"{100 * row['pocketsphinx_wer']:10.1f}% {row['pocketsphinx_rtf']:11.3f}"
                                                 if decoder is not None else "")
              + (f" streaming {100 * row['streaming_wer']:.1f}% RTF {row['streaming_rtf']:.3f}" if args.streaming else ""))
    print(json.dumps({"benchmark": "local_engines", "cores": os.cpu_count(), "results": results,
                      "whisper_real_time_target_met": bool(results) and all(r["whisper_rtf"] < 1 for r in results.values())}))


if __name__ == "__main__":
    main()
