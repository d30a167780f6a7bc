"""The public leaderboard: a server-rendered web app and a read-only JSON API over the store (`voxwatch serve`)."""
