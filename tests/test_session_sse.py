"""session/sse.py: server-sent events split off a buffer that reads may cut anywhere: complete events'
data (multi-line data joined, CRLF as LF, events without data dropped), the rest kept for the next read."""

from voxwatch.providers.session.sse import split_events


def test_complete_events_and_the_rest():
    events, rest = split_events('data: {"a": 1}\n\nevent: ping\n\ndata: one\r\ndata: two\r\n\r\ndata: {"b"')
    assert events == ['{"a": 1}', "one\ntwo"]
    assert rest == 'data: {"b"'
    events, rest = split_events(rest + ': 2}\n\n')
    assert events == ['{"b": 2}'] and rest == ""
