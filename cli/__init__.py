"""The ops CLI ``srcnet``: a REST client of the control plane (it never imports the server)."""
