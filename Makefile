# The README's test command, `make test`: the Rust crate's tests, then the Python package built
# from this checkout into a virtual environment (target/python-venv) and its tests. Needs Rust,
# Python ≥ 3.9 with venv and pip, and access to crates.io and PyPI.

PYTHON ?= python3
VENV := target/python-venv

.PHONY: test test-rust test-python

test: test-rust test-python

# The `checked` profile (Cargo.toml) optimises like `release` and keeps the crate's debug
# assertions; CI's slow tests reuse its build.
test-rust:
	cargo test --profile checked --all-features

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --upgrade pip

# `pip install ./python` builds the extension with maturin (release profile, abi3 wheel) and
# installs it with numpy; the test extra adds pytest, hypothesis, scipy and mypy, the optuna extra
# Optuna (with SQLAlchemy, for the SQLite storage of python/tests/test_optuna.py).
test-python: $(VENV)/bin/python
	$(VENV)/bin/python -m pip install --quiet "./python[test,optuna]"
	$(VENV)/bin/python -m pytest -q python/tests
