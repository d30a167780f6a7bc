"""A small benchmark in aiewf-eval's source layout (turns.py, tools.py, config.py, prompts/system.py,
data/knowledge_base.txt, generated WAVs at 24 and 16 kHz, a README with its License section), built in
a folder: what tests/test_scenario_peer_import.py imports, and `python -m benchmarks.peer_import --quick`
holds. The peer's own files are never committed here."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import soundfile as sf

COMMIT = "0123456789abcdef0123456789abcdef01234567"
BENCH = "tiny_context"
KB = "# Tiny Fair 2025\n\n## Meals\n- Lunch: 12:00pm - 1:00pm, Grand Hall\n"
TURNS = '''turns = [{'input': 'When is lunch?',
  'golden_text': 'Lunch is from **12:00 PM** to 1:00 PM\\n\\nin the Grand Hall on June 4th.',
  'required_function_call': None,
  'audio_file': 'turns_audio/turn_000.wav'},
 {'input': 'My name is Ada Byron and I am vegan.',
  'golden_text': 'Thank you, Ada. I have submitted your vegan request for session 941249.',
  'required_function_call': {'name': 'submit_dietary_request',
                             'args': {'name': 'Ada Byron', 'dietary_preference': 'vegan'}},
  'function_call_response': {'status': 'queued'},
  'audio_file': 'turn_001.wav'},
 {'input': 'That is all, goodbye.',
  'golden_text': 'Goodbye!',
  'required_function_call': {'name': 'end_session', 'args': {}},
  'audio_file': 'turns_audio/turn_002.wav'}]
'''
TOOLS = '''from pipecat.adapters.schemas.function_schema import FunctionSchema
from pipecat.adapters.schemas.tools_schema import ToolsSchema

end_session_function = FunctionSchema(name="end_session", description="End the session.", properties={}, required=[])
dietary_function = FunctionSchema(
    name="submit_dietary_request",
    description="Submit a dietary request.",
    properties={"name": {"type": "string"}, "dietary_preference": {"type": "string"}},
    required=["name", "dietary_preference"],
)
ToolsSchemaForTest = ToolsSchema(standard_tools=[dietary_function, end_session_function])
'''
SYSTEM = '''"""System instruction."""
from pathlib import Path

_PREAMBLE = """
Today is June 2, 2025. You are the fair's voice assistant.
### KNOWLEDGE BASE
"""
_TOOLS_SECTION = """### AVAILABLE TOOLS
Call submit_dietary_request when asked."""


def _load_knowledge_base() -> str:
    return (Path(__file__).parent.parent / "data" / "knowledge_base.txt").read_text(encoding="utf-8")


system_instruction = _PREAMBLE + _load_knowledge_base() + _TOOLS_SECTION
'''
CONFIG = '''"""Configuration."""
from benchmarks._shared import turns, ToolsSchemaForTest


class BenchmarkConfig:
    name = "tiny_context"
    description = "A tiny benchmark"
    turns = turns
'''


SPOKEN = ("When is lunch?", "My name is Ada Byron and I am vegan.", "That is all, goodbye.")
"""The turns' inputs, as TURNS has them: what aiewf_layout(speech=True) has eSpeak NG say."""


def tone(path: Path, rate: int, seconds: float = 0.6) -> None:
    t = np.arange(int(rate * seconds)) / rate
    sf.write(str(path), (0.2 * np.sin(2 * np.pi * 220 * t) * 32767).astype("<i2"), rate, subtype="PCM_16")


def spoken(path: Path, rate: int, text: str) -> None:
    """`text` said by eSpeak NG at `rate`: audio that the VAD finds words in (a tone it does not)."""
    from voxwatch.foundation.audio import resample
    from voxwatch.providers.local.espeak_engine import EspeakEngine

    engine = EspeakEngine.get()
    x = resample(engine.render(text, "en-us", 170) / 32768.0, engine.sample_rate, rate)
    sf.write(str(path), (np.clip(x, -1, 1) * 32767).astype("<i2"), rate, subtype="PCM_16")


def aiewf_layout(root: Path, speech: bool = False, **replace: str) -> Path:
    """A benchmark in aiewf-eval's source layout; `replace` swaps a file's text (by its key); with
    `speech`, each turn's audio says its input (eSpeak NG) instead of a tone."""
    texts = {"turns": TURNS, "tools": TOOLS, "system": SYSTEM, "config": CONFIG, "kb": KB,
             "readme": "# tiny\n\n## License\n\nMIT\n"} | replace
    bench, shared = root / "benchmarks" / BENCH, root / "benchmarks" / "_shared"
    for folder in (shared / "audio", bench / "prompts", bench / "data"):
        folder.mkdir(parents=True, exist_ok=True)
    for key, path in (("turns", shared / "turns.py"), ("tools", shared / "tools.py"), ("config", bench / "config.py"),
                      ("system", bench / "prompts" / "system.py"), ("kb", bench / "data" / "knowledge_base.txt"),
                      ("readme", root / "README.md")):
        if texts[key]:
            path.write_text(texts[key], encoding="utf-8")
    for i, rate in enumerate((24_000, 16_000, 24_000)):
        if speech:
            spoken(shared / "audio" / f"turn_{i:03d}.wav", rate, SPOKEN[i])
        else:
            tone(shared / "audio" / f"turn_{i:03d}.wav", rate)
    tone(shared / "audio" / "turn_001-short-yes.wav", 24_000)
    return root
