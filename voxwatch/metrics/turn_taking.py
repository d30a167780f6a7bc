"""How an agent takes turns with a caller who behaves (METHOD "Conversations", "Caller behaviours"):
barge-in stop latency and premature response inside a mid-turn pause, read from the call recording.

Both use the audible-onset detector's conventions (voxwatch/metrics/onset.py): a 10 ms window at a
1 ms hop is audible above -40 dBFS, and a sound counts once it has lasted 50 ms. The end of a sound
is the onset of the time-reversed audio (as the shared VAD anchors' speech end is, metrics/vad.py).

- Barge-in stop: the caller starts its turn (its speech start) while the agent is still talking.
  The agent's talk under way then ends at the last audible sample before the first stretch of
  STOP_GAP_S with no audible window (pauses between the agent's words are shorter); the stop
  latency is that end minus the caller's start. An agent silent for STOP_GAP_S from the caller's
  start was not talked over: no barge-in happened (None). That end is where the caller heard the
  agent stop (the recording keeps every sample received): barge-in stop (heard).
- The agent's own stop (agent_stop): where the agent stopped, as its transport states it. A
  transport with a `clear` (Twilio Media Streams) drops the audio still queued when the agent
  sends it, so an agent that streams its reply ahead of real time stops at its first clear at or
  after the caller's start, or where its audio ran out if that came first (the heard end). A
  transport without one (raw PCM frames) plays every frame it was sent: the agent stops at the end
  of the audio it had sent for playout, the heard end. Barge-in stop latency is that stop minus the
  caller's start.
- Premature response: the agent's first audible onset falls inside a pause the caller made in
  the middle of its turn (on [pause start, pause end): an onset needs 50 ms of sound, so the
  sound is sought up to 50 ms past the pause's end).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from voxwatch.metrics.onset import OnsetParams, detect_onset, windowed_rms

STOP_GAP_S = 0.3  # the agent's talk has stopped after this long without an audible window
STOP_SEARCH_S = 20.0  # how far past the caller's start the agent's talk is followed


def _audible(x: np.ndarray, rate: int, params: OnsetParams) -> tuple[np.ndarray, int, int]:
    hop = max(1, round(params.hop_s * rate))
    win = hop * params.window_hops
    return windowed_rms(x, win, hop) > params.threshold_rms, hop, win


def talk_end(agent: np.ndarray, start: int, rate: int, params: OnsetParams = OnsetParams()) -> int | None:
    """Sample index (on `agent`) where the agent's talk under way at `start` ends, or None when it is
    silent for STOP_GAP_S from `start` (nothing under way). `agent` is float audio in [-1, 1]."""
    x = np.asarray(agent[start:start + int(STOP_SEARCH_S * rate)], dtype=np.float64)
    audible, hop, win = _audible(x, rate, params)
    gap = int(round(STOP_GAP_S / params.hop_s))
    if audible.size == 0 or not audible[:gap].any():
        return None
    quiet = np.concatenate((~audible, np.zeros(gap, dtype=bool)))  # past the search: not known quiet
    runs = np.convolve(quiet.astype(np.int32), np.ones(gap, dtype=np.int32), mode="valid")
    first_gap = np.flatnonzero(runs[: audible.size] >= gap)
    stop_window = int(first_gap[0]) if first_gap.size else audible.size
    hi = min(x.size, stop_window * hop + win)
    offset = detect_onset(x[:hi][::-1], rate, params)
    return start + (hi - offset if offset is not None else 0)


def agent_stop(heard_end: float, caller_start: float, clears: Sequence[float] = ()) -> float:
    """Where the agent stopped talking over the caller (seconds, one clock for all three): its first
    clear at or after `caller_start` when that came before `heard_end` (the talk's end on the
    recording, talk_end), else `heard_end`. A clear before the caller started answered nothing of
    this barge-in."""
    cleared = [c for c in clears if c >= caller_start]
    return min(heard_end, min(cleared)) if cleared else heard_end


def premature_response(agent: np.ndarray, pause_start: int, pause_end: int, rate: int,
                       params: OnsetParams = OnsetParams()) -> bool:
    """Did the agent's first audible onset after `pause_start` fall inside the caller's pause?"""
    if pause_end <= pause_start:
        raise ValueError("a pause must end after it starts")
    reach = pause_end + int(round(params.sustain_s * rate))
    onset = detect_onset(np.asarray(agent[pause_start:reach], dtype=np.float64), rate, params)
    return onset is not None and pause_start + onset < pause_end
