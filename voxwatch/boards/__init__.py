"""Formatting what readers read from the store: the rolling leaderboard, listings, row options."""
