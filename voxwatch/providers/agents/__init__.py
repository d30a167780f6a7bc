"""A team's own deployed voice agent, reached as a caller: the line every transport shares (line.py)
and each transport's wire (twilio.py: Twilio Media Streams; pcm_ws.py: raw PCM frames)."""
