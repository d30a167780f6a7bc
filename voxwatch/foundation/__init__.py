"""The foundation every layer stands on: clocks, observations, text, audio, redaction and the plain
data types (events, scenarios, personas, conversation items) that measuring and scoring share.
It imports nothing else of voxwatch's (docs/ARCHITECTURE.md)."""
