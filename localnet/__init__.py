"""The whole SRC network on one machine: private PostgreSQL, Redis, one XRootD server per site,
Celery workers and the web server, all started and stopped by PID under a project-local state folder.

Nothing here imports Django: Django's settings read the runtime file this package writes.
"""
