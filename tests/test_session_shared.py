"""What adapters share over HTTP (session/): a multipart form POST (endpoints.WarmClient.post_form),
its exchange marked, a refusal and a dropped response read by kind; and a WAV body read as it
arrives (wav_stream). A WebSocket send on a closed session: tests/test_reader_session.py."""

import asyncio
import struct

import pytest

from voxwatch.foundation.events import REQUEST_SENT, RESPONSE, Timeline
from voxwatch.providers.base import ProviderError
from voxwatch.providers.session.endpoints import WarmClient
from voxwatch.providers.session.wav_stream import WavStream


def _http_server(answer: bytes):
    """A loopback HTTP/1.1 server that reads one whole request, then writes `answer` and closes; its port."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length"))
        await reader.readexactly(length)
        writer.write(answer)
        await writer.drain()
        writer.close()

    return asyncio.start_server(handle, "127.0.0.1", 0)


async def _post(answer: bytes) -> tuple[bytes | ProviderError, Timeline]:
    timeline = Timeline()
    async with await _http_server(answer) as server:
        client = WarmClient(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}", {}, "Example")
        try:
            body = await client.post_form("/v1/audio/transcriptions", {"file": ("a.wav", b"RIFF" + bytes(400), "audio/wav")},
                                          {"model": "m"}, timeline)
        except ProviderError as exc:
            body = exc
        finally:
            await client.aclose()
    return body, timeline


def test_a_form_post_returns_the_body_and_marks_its_exchange():
    body, timeline = asyncio.run(_post(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                                       b"content-length: 14\r\nconnection: close\r\n\r\n{\"text\": \"hi\"}"))
    assert body == b'{"text": "hi"}'
    sent, response = timeline.first(REQUEST_SENT), timeline.first(RESPONSE)
    assert sent is not None and response is not None and sent.t_ns <= response.t_ns
    assert response.http_version == "HTTP/1.1"


def test_a_refused_form_post_is_read_as_http_and_a_cut_body_as_a_drop():
    refused, _ = asyncio.run(_post(b"HTTP/1.1 429 Too Many Requests\r\nretry-after: 3\r\ncontent-length: 0\r\n"
                                   b"connection: close\r\n\r\n"))
    assert isinstance(refused, ProviderError) and refused.status == "rate_limited" and refused.retry_after_s == 3.0
    cut, _ = asyncio.run(_post(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\n{\"te"))
    assert isinstance(cut, ProviderError) and cut.status == "disconnected"


def _wav_head(rate: int, data_size: int = 0xFFFFFFFF, extra: bytes = b"", bits: int = 16) -> bytes:
    fmt = struct.pack("<HHIIHH", 1, 1, rate, rate * 2, 2, bits)
    return (b"RIFF" + struct.pack("<I", 0xFFFFFFFF) + b"WAVE" + b"fmt " + struct.pack("<I", 16) + fmt + extra
            + b"data" + struct.pack("<I", data_size))


def test_a_streamed_wav_gives_its_samples_as_they_arrive_whatever_the_pieces():
    """A placeholder data size, a LIST chunk (odd length, padded) before the data, pieces cut anywhere:
    the samples come out whole, in order, at the header's rate."""
    samples = bytes(range(200)) * 3
    body = _wav_head(22050, extra=b"LIST" + struct.pack("<I", 5) + b"abcde\x00") + samples
    for step in (1, 7, 44, 1000):
        wav, out = WavStream(), b""
        for i in range(0, len(body), step):
            piece = wav.feed(body[i:i + step])
            assert len(piece) % 2 == 0
            out += piece
        wav.finish()
        assert out == samples and wav.sample_rate == 22050


def test_a_wav_that_is_not_mono_pcm16_or_ends_early_is_refused():
    with pytest.raises(ValueError):
        WavStream().feed(_wav_head(24000, bits=8) + bytes(10))
    with pytest.raises(ValueError):
        WavStream().feed(b"ID3\x04" + bytes(40))
    cut = WavStream()
    cut.feed(_wav_head(24000)[:30])
    with pytest.raises(ValueError):
        cut.finish()
    odd = WavStream()
    odd.feed(_wav_head(24000) + b"\x01\x02\x03")
    with pytest.raises(ValueError):
        odd.finish()
