"""python -m localnet {up,down,status,demo,test,longhaul,monitoring}: the local SRC network from the shell."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

from .longhaul_cli import add_commands as add_longhaul_commands
from .monitoring_cli import add_commands as add_monitoring_commands
from .stack import down, ensure_core, service_env
from .state import PROJECT_ROOT, StateDir


def _cmd_up(args: argparse.Namespace) -> int:
    state = StateDir.named(args.state)
    started: dict[str, object] = dict(ensure_core(state))
    if args.rucio:
        from .pki import ensure_client_cert
        from .rucio import ensure_rucio, rucio_processes

        cert, _ = ensure_client_cert(state, "rucio-conveyor")
        started["rucio"] = ensure_rucio(state, usercert=cert).url
        started["rucio_processes"] = rucio_processes(state)
    print(json.dumps(started))
    return 0


def _cmd_down(args: argparse.Namespace) -> int:
    state = StateDir.named(args.state)
    stopped = down(state)
    print("stopped: " + (", ".join(stopped) if stopped else "nothing was running"))
    return 0


def _cmd_status(args: argparse.Namespace) -> int:
    """``runtime.json``, and every process the state recorded (``pids/``): its PID, whether it runs, and
    the account it runs as."""
    from .processes import account_of, is_alive, read_pid

    state = StateDir.named(args.state)
    processes = {}
    for pid_path in sorted((state.path / "pids").glob("*.pid")):
        pid = read_pid(state, pid_path.stem)
        alive = is_alive(pid)
        processes[pid_path.stem] = {"pid": pid, "running": alive, "account": account_of(pid) if alive else ""}
    print(json.dumps({**state.read_runtime(), "processes": processes}, indent=2))
    return 0


def _cmd_test(args: argparse.Namespace) -> int:
    """Start PostgreSQL and Redis for the test state, run pytest, stop what was started."""
    # SRCNET_TEST_STATE names another state, so that two runs on one machine keep separate stacks.
    name = os.environ.get("SRCNET_TEST_STATE", "test")
    state = StateDir.named(name)
    ensure_core(state)
    env = service_env(state, name)
    # Test runs share the test state's Redis: each gets its own Celery queue.
    env.setdefault("SRCNET_CELERY_QUEUE", f"srcnet-test-{os.getpid()}")
    try:
        return subprocess.call([sys.executable, "-m", "pytest", *args.pytest_args], env=env, cwd=PROJECT_ROOT)
    finally:
        if not os.environ.get("SRCNET_KEEP_TEST_STACK"):
            # The stacks of pytest-xdist's workers (tests/worker_stack.py) too: a worker that crashed or was
            # interrupted did not stop its own.
            for worker_state in sorted(state.path.parent.glob(f"{name}-gw*")):
                down(StateDir(worker_state))
            down(state)


def _cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    return run_demo(
        state_name=args.state,
        once=args.once,
        products_per_telescope=args.products,
        rucio=args.rucio,
        fail_one=args.fail_one,
        long_haul=args.long_haul,
    )


def build_parser() -> argparse.ArgumentParser:
    """The command line; defaults read from the environment when it is built."""
    parser = argparse.ArgumentParser(prog="python -m localnet", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for name, func in (("up", _cmd_up), ("down", _cmd_down), ("status", _cmd_status)):
        p = sub.add_parser(name)
        p.add_argument("--state", default="demo")
        if name == "up":
            p.add_argument(
                "--rucio",
                action="store_true",
                help="also the Rucio server and its daemons (conveyor, judge; docs/rucio.md)",
            )
        p.set_defaults(func=func)
    p = sub.add_parser("test", help="run the test suite against a private stack")
    p.add_argument("pytest_args", nargs=argparse.REMAINDER)
    p.set_defaults(func=_cmd_test)
    p = sub.add_parser("demo", help="bring the whole network up and push synthetic products")
    p.add_argument("--state", default="demo")
    p.add_argument(
        "--once",
        action="store_true",
        default=os.environ.get("SRCNET_DEMO_ONCE") == "1",
        help="push, print the summary and exit (non-zero if any product failed)",
    )
    p.add_argument(
        "--products",
        type=int,
        default=int(os.environ.get("SRCNET_DEMO_PRODUCTS", "3")),
        help="synthetic products per telescope",
    )
    p.add_argument(
        "--rucio",
        action="store_true",
        default=os.environ.get("SRCNET_DEMO_RUCIO") == "1",
        help="place products through a real Rucio server and its conveyor (docs/rucio.md)",
    )
    p.add_argument(
        "--fail-one",
        action="store_true",
        default=os.environ.get("SRCNET_DEMO_FAIL_ONE") == "1",
        help="delete one source file of the first product before the push, so that product fails "
        "(shows the failure path; with --once the exit status is 1)",
    )
    p.add_argument(
        "--long-haul",
        action="store_true",
        default=os.environ.get("SRCNET_DEMO_LONGHAUL") == "1",
        help="every site in a network namespace of its own behind the packet-level WAN emulator: the "
        "topology's RTTs and loss, capacities / 1000 (docs/operations.md, 'The long-haul network')",
    )
    p.set_defaults(func=_cmd_demo)
    add_longhaul_commands(sub)
    add_monitoring_commands(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    # The local network's own commands (the demo binds endpoints to its loopback sites in this process).
    os.environ.setdefault("SRCNET_ALLOW_LOCAL_STORAGE", "1")
    from .scitags import scitags_env

    for key, value in scitags_env().items():  # and marks its copies (localnet/scitags.py)
        os.environ.setdefault(key, value)
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "fail_one", False) and args.rucio:
        parser.error("--fail-one works with the embedded transfer path only, not with --rucio")
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
