"""The emulators' direction queue keeps its packets inside its arena (bench/wan/src/dirq_test.c): packets of
every length from 60 to 2000 bytes fill an arena whose end is not 64-byte aligned. Before the fix the tail,
advanced by the packet's length rounded up to 64 bytes, could pass the arena's end (and the head), and the
next packet was written over the memory beyond it (in wanemu only when a super-packet was split; in wannet,
which copies every packet into each hop's queue at its exact length, for any packet). Probably what made
one run of the long-haul link-cut fault test fail: its route never carried a connection again after the
restore, as if another hop's queue had been overwritten; after the fix its route came back after every
restore (5 runs)."""

import subprocess

from tests.wan.conftest import WAN


def test_the_arena_tail_never_passes_its_end():
    subprocess.run(["make", "-s", "-C", WAN, "build/dirq_test"], check=True, timeout=120)
    run = subprocess.run([f"{WAN}/build/dirq_test"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.strip() == "ok"
