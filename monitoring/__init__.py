"""Prometheus metrics of the platform (/metrics) and the alert rules that watch them (docs/monitoring.md)."""
