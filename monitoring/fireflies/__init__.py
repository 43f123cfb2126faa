"""The platform's SciTags firefly collector (issue 35): ``packets`` parses and validates a firefly,
``ledger`` records flows and exports them as metrics, ``collector`` receives them over UDP.

Pure of Django: the standard library and prometheus_client only, so that it runs anywhere as a small
service (``python -m monitoring.fireflies``; docs/network.md)."""
