"""The embedded transfer service: jobs of file copies executed by Celery workers with gfal2
third-party copies, with FTS3's job/file state model, per-link concurrency and bounded retries."""
