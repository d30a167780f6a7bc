"""Each metric definition pinned on hand-built audio and timelines (METHOD v2)."""

import numpy as np
import pytest

from support.late_chunks import chunks_sent
from support.signals import tone
from voxwatch.metrics.onset import detect_onset
from voxwatch.metrics.row_bootstrap import Interval, bootstrap_percentile_ci, bootstrap_pooled_ci
from voxwatch.metrics.series import summarize
from voxwatch.metrics.timeline import batch_metrics, connect_ms, pacing_error_ms, stt_stream_metrics, tts_metrics
from voxwatch.metrics.wer import WordErrors, clip_wer, pooled_wer, word_errors
from voxwatch.foundation.events import (AUDIO, CHUNK_SENT, CONNECT_START, CONNECTED, FINAL, PARTIAL, REQUEST_SENT,
                                        RESPONSE, Event, Timeline)


@pytest.mark.parametrize("rate", [16000, 22050, 24000, 48000])
def test_onset_of_a_sharp_tone_is_its_first_sample(rate):
    x = tone(rate, onset_s=0.3137, duration_s=0.5, total_s=1.0)
    onset = detect_onset(x, rate)
    assert abs(onset / rate - 0.3137) <= 0.001


def test_onset_ignores_a_click_and_finds_the_sustained_sound():
    rate = 24000
    x = tone(rate, onset_s=0.5, duration_s=0.3, total_s=1.0)
    x[int(0.1 * rate):int(0.1 * rate) + int(0.02 * rate)] = 0.5  # a 20 ms click, too short to be an onset
    assert abs(detect_onset(x, rate) / rate - 0.5) <= 0.001


@pytest.mark.parametrize("silence_s", [0.33, 0.012])
def test_a_quiet_lead_in_that_carries_into_loud_sound_is_part_of_the_onset(silence_s):
    """Like a 'th' at -45 dBFS running into a vowel, after long or almost no silence (as eSpeak starts)."""
    rate = 22050
    rng = np.random.default_rng(5)
    x = tone(rate, onset_s=silence_s + 0.07, duration_s=0.3, total_s=silence_s + 0.6)
    lead = slice(int(silence_s * rate), int((silence_s + 0.07) * rate))
    x[lead] = rng.standard_normal(lead.stop - lead.start) * 10 ** (-45 / 20)
    assert abs(detect_onset(x, rate) / rate - silence_s) <= 0.001


def test_quiet_audio_has_no_onset():
    rate = 16000
    assert detect_onset(tone(rate, 0.1, 0.5, 1.0, amplitude=0.005), rate) is None  # about -49 dBFS RMS
    assert detect_onset(np.zeros(rate), rate) is None


def _tts_timeline(chunks: list[tuple[int, np.ndarray]], rate: int, t0: int = 0) -> Timeline:
    """chunks: (arrival ns, samples) in stream order."""
    tl = Timeline(clock=lambda: 0)
    tl.events.append(Event(REQUEST_SENT, t0))
    offset = 0
    for arrival, samples in chunks:
        pcm = np.round(samples * 32767).astype("<i2").tobytes()
        tl.events.append(Event(AUDIO, arrival, sample_offset=offset, n_samples=samples.size, sample_rate=rate, audio=pcm))
        offset += samples.size
    return tl


def test_ttfa_is_ttfb_plus_leading_silence_when_faster_than_real_time():
    rate = 24000
    audio = tone(rate, onset_s=0.120, duration_s=0.4, total_s=0.6)
    chunk = rate // 10
    chunks = [(50_000_000 + i * 1_000_000, audio[i * chunk:(i + 1) * chunk]) for i in range(6)]
    m = tts_metrics(_tts_timeline(chunks, rate))
    assert m.ttfb_ms == pytest.approx(50.0)
    assert m.leading_silence_ms == pytest.approx(120.0, abs=1.0)
    assert m.ttfa_ms == pytest.approx(170.0, abs=1.0)


def test_ttfa_counts_late_speech_after_early_silence():
    """The gaming case: silence sent at once, speech 400 ms later."""
    rate = 24000
    silence = np.zeros(rate // 10)  # 100 ms of silence arrives at 10 ms
    speech = tone(rate, onset_s=0.0, duration_s=0.3, total_s=0.3)
    m = tts_metrics(_tts_timeline([(10_000_000, silence), (410_000_000, speech)], rate))
    assert m.ttfb_ms == pytest.approx(10.0)
    assert m.leading_silence_ms == pytest.approx(100.0, abs=1.0)
    # heard at max(10 ms, 410 ms - 100 ms) + 100 ms = 410 ms, not ttfb + silence = 110 ms
    assert m.ttfa_ms == pytest.approx(410.0, abs=1.0)


def _stt_timeline(events: list[tuple[str, int, str | None]], chunk: int = 320) -> Timeline:
    """Events as (kind, t, text); a CHUNK_SENT carries `chunk` samples (20 ms at 16 kHz)."""
    tl = Timeline(clock=lambda: 0)
    tl.events.extend(Event(kind, t, text=text, n_samples=chunk if kind == CHUNK_SENT else None)
                     for kind, t, text in events)
    return tl


def _paced(t0_ms: int, seconds: float, late: tuple[int, float] | None = None) -> list[tuple[str, int, None]]:
    """CHUNK_SENT every 20 ms from t0_ms for `seconds` (`late`: support.late_chunks), as _stt_timeline's events."""
    return [(CHUNK_SENT, e.t_ns, None) for e in chunks_sent(t0_ms * 1_000_000, [320] * int(round(seconds * 50)), late)]


def test_stt_clocks_are_anchored_on_the_shared_vad():
    ms = 1_000_000
    tl = _stt_timeline(_paced(1000, 2.6) + [(PARTIAL, 1350 * ms, ""), (PARTIAL, 1400 * ms, "hello"),
                                            (FINAL, 3900 * ms, "hello world")])
    m = stt_stream_metrics(tl, speech_start=0.25, speech_end=2.5, sample_rate=16000)
    assert m.first_partial_ms == pytest.approx(150.0)  # 1400 - (1000 + 250); the empty partial does not count
    assert m.first_partial_from_t0_ms == pytest.approx(400.0)
    assert m.ttfs_ms == pytest.approx(400.0)  # 3900 - (1000 + 2500)
    assert m.hypothesis == "hello world"


def test_stt_clocks_run_from_the_write_of_the_chunk_that_carried_the_anchor():
    """Chunk 100 (2.00-2.02 s of the audio, due at 3000 ms) written 30 ms late and the next in a burst
    after it (101 at 3031 ms, 102 on time at 3040): the speech end at 2.01 s went out when chunk 100
    was written, plus 10 ms into it; the speech start, in chunk 12 (on time), is where it always was;
    the peers' end at 2.025 s went out with chunk 101, 11 ms late, 5 ms into it."""
    ms = 1_000_000
    tl = _stt_timeline(_paced(1000, 2.2, late=(100, 30)) + [(PARTIAL, 1500 * ms, "hi"), (FINAL, 3300 * ms, "hi there")])
    m = stt_stream_metrics(tl, speech_start=0.25, speech_end=2.01, peer_speech_end=2.025, sample_rate=16000)
    assert m.ttfs_ms == 3300 - (3030 + 10)  # not 3300 - (1000 + 2010) = 290
    assert m.first_partial_ms == 1500 - (1000 + 250)
    assert m.first_partial_from_t0_ms == 500
    assert m.ttfs_peer_ms == 3300 - (3031 + 5)


def test_a_final_before_the_end_of_speech_gives_a_negative_ttfs_that_is_kept():
    ms = 1_000_000
    tl = _stt_timeline(_paced(0, 2.1) + [(FINAL, 1800 * ms, "first part"), (FINAL, 1900 * ms, "second"),
                                         (FINAL, 2300 * ms, "")])  # an empty flush after the last words is not the final
    m = stt_stream_metrics(tl, speech_start=0.1, speech_end=2.0, sample_rate=16000)
    assert m.ttfs_ms == pytest.approx(-100.0)
    assert m.hypothesis == "first part second"


def test_connect_time_and_pacing_error_come_from_their_events():
    ms = 1_000_000
    tl = Timeline(clock=lambda: 0)
    tl.events.extend([Event(CONNECT_START, 0), Event(CONNECTED, 120 * ms),
                      Event(CHUNK_SENT, 200 * ms, deadline_ns=200 * ms), Event(CHUNK_SENT, 223 * ms, deadline_ns=220 * ms),
                      Event(CHUNK_SENT, 240 * ms + 500, deadline_ns=240 * ms)])
    assert connect_ms(tl) == pytest.approx(120.0)
    assert pacing_error_ms(tl) == pytest.approx(3.0)
    assert connect_ms(Timeline(clock=lambda: 0)) is None


def test_batch_latency_and_real_time_factor():
    ms = 1_000_000
    tl = _stt_timeline([(REQUEST_SENT, 5 * ms, None), (RESPONSE, 405 * ms, None), (FINAL, 405 * ms, "hi")])
    m = batch_metrics(tl, audio_seconds=2.0)
    assert m.latency_ms == pytest.approx(400.0) and m.rtf == pytest.approx(0.2) and m.hypothesis == "hi"


def test_wer_uses_the_whisper_normalizer_and_counts_each_kind():
    assert word_errors("Yes, that's right.", "yes that is right") == WordErrors(0, 0, 0, 4)
    e = word_errors("I was charged forty five dollars", "i was charged fifty five dollars today")
    assert (e.substitutions, e.deletions, e.insertions, e.ref_words) == (1, 0, 1, 4)


def test_empty_reference_or_hypothesis_never_divides_by_zero():
    assert word_errors("", "") == WordErrors(0, 0, 0, 0)
    assert word_errors("", "noise words") == WordErrors(0, 0, 2, 0)
    assert word_errors("three words here", "") == WordErrors(0, 3, 0, 3)
    assert clip_wer(WordErrors(0, 0, 2, 0)) is None
    assert pooled_wer([]) is None


def test_pooled_wer_differs_from_the_mean_of_clip_wers():
    parts = [WordErrors(1, 0, 0, 2), WordErrors(0, 0, 0, 18)]
    assert pooled_wer(parts) == pytest.approx(1 / 20)
    assert np.mean([clip_wer(p) for p in parts]) == pytest.approx(0.25)


def test_percentiles_interpolate_linearly_and_small_n_is_na():
    s = summarize([1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
    assert (s.n, s.mean, s.p50, s.max) == (10, 5.5, 5.5, 10)
    assert s.p95 is None and s.p99 is None  # a tail percentile needs 5 values beyond it (METHOD "Aggregates")
    big = summarize(list(range(1, 101)))
    assert big.p95 == pytest.approx(95.05) and big.p99 is None  # percentile_cont(0.95)
    small = summarize([1, 2, 3, 4, None])
    assert small.n == 4 and small.p50 is None and small.mean is None


def test_method_3_row_bootstrap_kept_for_comparison_covers_the_estimate_and_narrows():
    rng = np.random.default_rng(3)
    small, large = rng.lognormal(5, 0.5, 20), rng.lognormal(5, 0.5, 400)
    ci_small, ci_large = bootstrap_percentile_ci(small, 50), bootstrap_percentile_ci(large, 50)
    assert ci_small.low <= np.median(small) <= ci_small.high
    assert (ci_large.high - ci_large.low) < (ci_small.high - ci_small.low)
    assert bootstrap_percentile_ci(small, 50) == ci_small  # seeded: the same data gives the same interval
    assert bootstrap_percentile_ci([1, 2, 3, 4], 50) is None


def test_method_3_pooled_wer_row_bootstrap():
    errors, words = [0, 1, 0, 2, 0, 0, 1, 0], [10, 10, 12, 8, 10, 9, 11, 10]
    ci = bootstrap_pooled_ci(errors, words)
    assert ci.low <= sum(errors) / sum(words) <= ci.high and ci.low >= 0
    assert bootstrap_pooled_ci([0] * 6, [5] * 6) == Interval(0.0, 0.0)
    assert bootstrap_pooled_ci([1, 2], [3, 4]) is None
