"""One copy as the platform's Celery worker makes it, from wherever this process runs: copy_rtts.py starts it
inside an emulated path's namespace, so that the worker's own requests cross the path as they would from a
worker at that end.

    python worker_copy.py SOURCE DESTINATION ADLER32 SIZE [STREAMS]

It runs ``transfers.executor.copy_with_tokens``, the function a worker's copy task calls: the storage
registry's check, the copy's own tokens from the issuer (when one is configured), gfal2's third-party copy
with the job defaults of a push (checksums verified at both ends, no overwrite; STREAMS as a job's
``nostreams``, the tool's default without it) and the checksums. It prints
one JSON object: the CLOCK_MONOTONIC times (which the emulator's packet trace also reads) at which the copy
was asked for and answered, and the outcome."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def main(argv: list[str]) -> int:
    if len(argv) not in (4, 5):
        print(__doc__, file=sys.stderr)
        return 2
    source, destination, adler32, size = argv[:4]
    streams = {"nostreams": int(argv[4])} if len(argv) == 5 else {}
    import django

    django.setup()
    from transfers.executor import copy_with_tokens

    asked = time.monotonic_ns()
    outcome = copy_with_tokens(
        source=source,
        destination=destination,
        checksum=f"adler32:{adler32}",
        verify="both",
        filesize=int(size),
        **streams,
    )
    answered = time.monotonic_ns()
    print(
        json.dumps(
            {
                "asked_ns": asked,
                "answered_ns": answered,
                "ok": outcome.ok,
                "error": outcome.error,
                "bytes": outcome.bytes,
                "source_checksum": outcome.source_checksum,
                "dest_checksum": outcome.dest_checksum,
                "parameters": outcome.parameters,
            }
        )
    )
    return 0 if outcome.ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
