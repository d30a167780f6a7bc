"""Regression alerts: a periodic check of each (model, metric, dataset, region) against its own past,
with a pending -> firing -> resolved lifecycle and webhook notifications (docs/ALERTS.md)."""
