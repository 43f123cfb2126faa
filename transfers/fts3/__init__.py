"""The FTS3 REST protocol on top of the transfer service: what Rucio's conveyor and the ``fts3`` client
speak (see docs/fts3.md for the subset, and what a client gets for what is not implemented)."""
