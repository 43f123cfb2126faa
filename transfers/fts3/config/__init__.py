"""FTS3's configuration API (``/config/links``, ``/config/se``, ``/config/activity_shares``) over the
transfer service's own limits: one module per resource reads FTS3's bodies, writes the rows in one
transaction and formats FTS3's answers; ``views`` is the HTTP layer. The embedded transfertool calls the same
functions in-process, so both ways in refuse and accept the same bodies."""
