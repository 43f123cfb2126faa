"""Writes to the topology: import/export of topology files and path computation."""
