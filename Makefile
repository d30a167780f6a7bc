# The README's two set-up commands: `make run` and `make test`. Everything else is a helper.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
# tests/test_pipecat_agent.py's bot: Pipecat in its own folder (its pins conflict with voxwatch's: constraints-pipecat.txt),
# installed for `make test` only (`make run` never needs it)
PIPECAT := 'pipecat-ai[silero,websocket]==1.14.0' 'uvicorn==0.54.0'
PIPECAT_STAMP := $(VENV)/pipecat-site/.installed-stamp

.PHONY: run test test-quick install clean

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -c constraints.txt -e '.[test]'
	touch $(STAMP)

$(PIPECAT_STAMP): constraints-pipecat.txt | $(STAMP)
	rm -rf $(VENV)/pipecat-site
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-warn-conflicts --target $(VENV)/pipecat-site \
		-c constraints-pipecat.txt $(PIPECAT)
	touch $(PIPECAT_STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/voxwatch run --conversation-turns 3

# the whole suite, what CI runs: four workers, a test file each (most tests wait on audio paced in real
# time or on subprocesses, so four files at a time keep 2 cores busy; each file keeps its emulators,
# databases and Redis queues to itself). The preflight gets Postgres, Redis and Chromium or stops in one line.
test:
	@sh tests/support/preflight.sh --browser
	@$(MAKE) --no-print-directory install $(PIPECAT_STAMP)
	$(BIN)/python -m pytest -n 4 --dist loadfile

# the developer's loop, under 2 minutes on 2 cores: everything but the slow kinds (pyproject.toml markers)
test-quick:
	@sh tests/support/preflight.sh
	@$(MAKE) --no-print-directory install
	$(BIN)/python -m pytest -n 2 -m "not (realtime or e2e or browser or faults or bench)"

clean:
	rm -rf $(VENV) var
