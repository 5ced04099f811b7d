# The two front doors: `make demo` and `make test`. Both create .venv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-slow lint typecheck bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[dev]"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/costart demo $(DEMO_ARGS)

test: $(STAMP)
	@[ -n "$$COSTART_TEST_POSTGRES_URL" ] || scripts/ensure-postgres.sh >/dev/null
	@[ -n "$$COSTART_CHROMIUM" ] || scripts/ensure-chromium.sh >/dev/null
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/pytest -q -m "not slow"

# The larger local profile: long hypothesis runs and many crash kills.
test-slow: $(STAMP)
	COSTART_PROFILE=slow $(BIN)/pytest -q

lint: $(STAMP)
	$(BIN)/ruff check .

typecheck: $(STAMP)
	$(BIN)/mypy

bench: $(STAMP)
	@for b in bench/bench_*.py; do [ -e "$$b" ] || continue; echo "== $$b"; $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
