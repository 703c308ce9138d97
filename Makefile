# Every install step lives here: a fresh machine needs nothing but python3.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

.PHONY: all install test lint typecheck check demo run bench clean

all: test

# The venv is rebuilt when pyproject.toml changes. `editable_mode=compat`
# installs a plain path entry instead of an import hook, so starting the
# interpreter (and so every `wsd-hook` run) costs nothing extra.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet --config-settings editable_mode=compat -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

test: $(STAMP)
	$(BIN)/python -m pytest -q

lint: $(STAMP)
	$(BIN)/ruff check schema hooks daemon tests bench
	$(BIN)/ruff format --check schema hooks daemon tests bench

typecheck: $(STAMP)
	$(BIN)/mypy

check: lint typecheck test

demo: $(STAMP)
	$(BIN)/python -m daemon.demo

run: $(STAMP)
	$(BIN)/wsd run

bench: $(STAMP)
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache
