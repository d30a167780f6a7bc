"""Grafana: the panels' SQL (one definition with metrics/), their units and intervals, and pushing
the dashboards."""
