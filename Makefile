# The README's two set-up commands: `make run` and `make test`. Everything else is a helper.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: run test install clean

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -c constraints.txt -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/voxwatch run --conversation-turns 3

# three workers, a test file each: most tests wait on audio paced in real time or on subprocesses, so
# three files at a time keep 2 cores busy; each file keeps its emulators, databases and Redis queues to itself
test: $(STAMP)
	$(BIN)/python -m pytest -n 3 --dist loadfile

clean:
	rm -rf $(VENV) var
