"""The demo store's watermark on every response (voxwatch.store.demo): pages carry a banner (base.html's
`watermark`), and this middleware puts the same words on every API document as a `watermark` field
and on every response as the `X-Voxwatch-Data: emulated` header (a CSV download included), so an
emulator's figure leaves the server nowhere without them."""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Message, Receive, Scope, Send

HEADER = (b"x-voxwatch-data", b"emulated")


class Watermark:
    """Outermost middleware of a demo store's app: adds the header to every response and the
    `watermark` field to every JSON object it sends (re-encoded, its length corrected)."""

    def __init__(self, app: ASGIApp, text: str) -> None:
        self.app, self.text = app, text

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start: Message | None = None
        body: list[bytes] = []

        async def marked(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                start = {**message, "headers": [*message.get("headers", []), HEADER]}
                if not _is_json(start):
                    await send(start)
                return
            if start is None or not _is_json(start):
                await send(message)
                return
            body.append(message.get("body", b""))
            if message.get("more_body"):
                return
            payload = self._marked(b"".join(body))
            headers = [(k, v) for k, v in start["headers"] if k.lower() != b"content-length"]
            await send({**start, "headers": [*headers, (b"content-length", str(len(payload)).encode())]})
            await send({"type": "http.response.body", "body": payload})

        await self.app(scope, receive, marked)

    def _marked(self, raw: bytes) -> bytes:
        try:
            doc = json.loads(raw)
        except ValueError:
            return raw
        if isinstance(doc, dict):
            doc = {"watermark": self.text, **doc}
        return json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode()


def _is_json(start: Message) -> bool:
    return any(k.lower() == b"content-type" and v.startswith(b"application/json") for k, v in start["headers"])
