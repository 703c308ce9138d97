# Every install step lives here: a fresh machine needs nothing but python3.
PYTHON ?= python3
# `make check VENV=.venv-bare EXTRAS=tools` checks the package without its extras (CI runs both).
VENV   ?= .venv
EXTRAS ?= dev
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

.PHONY: all install test lint typecheck check demo run bench soak clean sftp-server

all: test

# The checkout's daemon/, hooks/, redact/ and schema/ are installed as wsd.daemon, wsd.hooks,
# wsd.redact and wsd.schema. `editable_mode=strict` links each source file into a tree under
# build/ and adds that tree as a plain path entry: no import hook, so starting the interpreter
# (and so every `wsd-hook` run) costs nothing extra, and an edit is live at once. A new or
# removed module changes its folder's mtime, which re-links (the folders are prerequisites).
CODE_DIRS := $(shell find schema redact hooks daemon deploy -type d -not -name __pycache__)

$(STAMP): pyproject.toml $(CODE_DIRS)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	PYTHONWARNINGS='ignore:Editable installation' $(BIN)/python -m pip install --quiet --config-settings editable_mode=strict -e '.[$(EXTRAS)]'
	touch $(STAMP)

install: $(STAMP)

# Three workers on two cores: the suite mostly waits (daemons, sockets, supervisord).
TEST_WORKERS ?= 3

test: $(STAMP)
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --maxschedchunk 1

lint: $(STAMP)
	$(BIN)/ruff check schema redact hooks daemon tests bench soak
	$(BIN)/ruff format --check schema redact hooks daemon tests bench soak

typecheck: $(STAMP)
	$(BIN)/mypy

check: lint typecheck test

demo: $(STAMP)
	$(BIN)/python -m wsd.daemon.standin.demo

run: $(STAMP)
	$(BIN)/wsd run

bench: $(STAMP)
	$(BIN)/python -m bench $(NAMES)

# The chaos soak: SOAK_MINUTES of combined faults, then every invariant (python -m soak --help).
SOAK_MINUTES ?= 10
soak: $(STAMP)
	$(BIN)/python -m $(if $(filter 3,$(MACHINES)),soak.machines,soak) --minutes $(SOAK_MINUTES) $(if $(SEED),--seed $(SEED))

# The SFTP replication test needs a real OpenSSH server (Debian's openssh-server) and is
# skipped where there is none; CI installs it where it can (root and apt), never failing on it.
sftp-server:
	@command -v /usr/sbin/sshd >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && { DEBIAN_FRONTEND=noninteractive apt-get install -y -q openssh-server >/dev/null 2>&1 || { apt-get update -q >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q openssh-server >/dev/null 2>&1; }; }; } || echo "openssh-server is not installed: the SFTP replication test is skipped"

clean:
	rm -rf .venv .venv-bare build *.egg-info .pytest_cache .mypy_cache .ruff_cache
