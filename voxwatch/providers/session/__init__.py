"""What every adapter shares, written once: the connection (endpoints: the vendor's URL, its key, a
warmed HTTP client; stamped, stamped_http, socket_stream, h2_frames: every read and write stamped at
the socket; h2_duplex: one HTTP/2 request written and read at once; live_line: the caller's line kept
open, silent, for APIs that detect the turn's end themselves), the reader envelope (ws_session;
agent_turn, a conversation turn's), the audio as it arrives (pcm: whole samples out of chunks that
split them), and the failure mapping (close_codes, endpoints.http_status). No vendor's protocol lives
here, but for what all of one cloud's APIs share: AWS's event-stream framing and Signature Version 4
(aws_event_stream)."""
