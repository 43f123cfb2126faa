"""The transfertool clients: how the push loop hands copies to a transfer service, speaking only the FTS3
REST protocol (``interface``: what a transfertool does; ``fts3_rest``: any FTS3 endpoint through the real
``fts3`` client; ``protocol``: the protocol's shared words). No Django and no app of the platform here
(``scripts/check_layers.py``): the platform's own service offers itself as a transfertool from its own
app (``transfers.embedded_transfertool``)."""
