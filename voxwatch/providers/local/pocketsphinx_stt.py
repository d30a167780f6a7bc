"""pocketsphinx as a streaming STT provider: partial hypotheses while audio arrives, then a final.

The decoder runs in its own process (decoder_process.py), as a server would.
"""

from __future__ import annotations

from importlib.metadata import version
from multiprocessing.connection import Connection
from typing import Any, Callable

from voxwatch.providers.local.decoder_process import ProcessDecoderSTT

SAMPLE_RATE = 16000


def _serve(conn: Connection) -> None:
    """The decoder process (the protocol is decoder_process.py's)."""
    from pocketsphinx import Decoder

    decoder = Decoder(samprate=SAMPLE_RATE, loglevel="FATAL")
    conn.send(("ready", ""))
    last, seq, open_utt = "", -1, False
    while True:
        try:
            message = conn.recv()
        except EOFError:
            return
        try:
            if message[0] == "start":
                if open_utt:
                    decoder.end_utt()  # an abandoned stream's utterance
                decoder.start_utt()
                last, seq, open_utt = "", message[1], True
            elif message[0] == "audio" and open_utt:
                decoder.process_raw(message[1], False, False)
                hyp = decoder.hyp()
                text = hyp.hypstr if hyp is not None else ""
                if text and text != last:
                    conn.send((seq, "partial", text))
                    last = text
            elif message[0] == "end" and open_utt:
                decoder.end_utt()
                open_utt = False
                hyp = decoder.hyp()
                conn.send((seq, "final", hyp.hypstr if hyp is not None else ""))
        except Exception as exc:  # reported to the client, which makes it an error row
            open_utt = False
            conn.send((seq, "error", f"{type(exc).__name__}: {exc}"))


class PocketsphinxSTT(ProcessDecoderSTT):
    engine = "pocketsphinx"

    @staticmethod
    def installed_version() -> str:
        return version("pocketsphinx")

    def serve_target(self) -> tuple[Callable[..., None], tuple[Any, ...]]:
        return _serve, ()
