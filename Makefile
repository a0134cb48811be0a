# APEX-Voice Studio. `make run` and `make test` set up everything they need on a fresh machine.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
DEMO   ?= runs/demo

.PHONY: setup system-packages run test lint typecheck pytest bench clean

setup: system-packages $(STAMP)

# Debian packages: espeak-ng speaks the scripted agent's turns and builds the bank.
system-packages:
	@if ! command -v espeak-ng >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq espeak-ng; \
	  else \
	    echo "espeak-ng is missing: run 'sudo apt-get install espeak-ng' (or make as root)"; exit 1; \
	  fi; \
	fi

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP)

# The main job with embedded defaults: every bundled task against its offline oracle agent,
# then the campaign scorecard. (The web app arrives with the web-app issue.)
run: setup
	$(BIN)/apex-voice tasks validate tasks
	$(BIN)/apex-voice run --tasks tasks --agent scripted:oracle --repeats 3 --out $(DEMO)
	$(BIN)/apex-voice report $(DEMO)

lint: setup
	$(BIN)/ruff check app runtime grading study_protocols tests bench

typecheck: setup
	$(BIN)/mypy

pytest: setup
	$(BIN)/pytest -q

test: lint typecheck pytest

bench: setup
	$(BIN)/python bench/bench_runtime.py

clean:
	rm -rf $(VENV) runs .mypy_cache .ruff_cache .pytest_cache
