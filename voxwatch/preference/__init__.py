"""The human-preference leaderboard's data (docs/PREFERENCE.md): prompts, model configurations,
their outputs, rating pairs and the ratings; the statistics live in metrics/."""
