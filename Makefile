# The two commands a newcomer needs (README.md): `make demo` and `make test`.
PYTHON := .venv/bin/python

.PHONY: bootstrap demo demo-once test lint stop clean-state

bootstrap:
	@bash scripts/bootstrap.sh

# LONGHAUL=1: every site in a network namespace of its own behind the WAN emulator (docs/operations.md).
LONGHAUL_ARGS := $(if $(filter 1,$(LONGHAUL)),--long-haul)

## The whole network on this machine, a push of synthetic products, then running until Ctrl-C.
demo: bootstrap
	@$(PYTHON) -m localnet demo $(LONGHAUL_ARGS) $(DEMO_ARGS)

## The same push, the summary, and exit (non-zero if any product failed).
demo-once: bootstrap
	@$(PYTHON) -m localnet demo --once $(LONGHAUL_ARGS) $(DEMO_ARGS)

## The static checks, then every test, against real PostgreSQL, Redis, XRootD servers and Celery workers.
test: bootstrap
	@bash scripts/test.sh $(PYTEST_ARGS)

lint: bootstrap
	@bash scripts/lint.sh

stop:
	@$(PYTHON) -m localnet down --state demo

clean-state: stop
	rm -rf .state
