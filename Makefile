# The two front doors: `make demo` and `make test`. Both create .venv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test docs test-slow test-explore mutate mutate-clean lint typecheck bench clean

# setup.py and the C source: a changed compiled module is rebuilt by the install (ADR 0155).
$(STAMP): pyproject.toml setup.py costart/store/_chunkcheck.c
	@scripts/ensure-compiler.sh $(PYTHON)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[dev]"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/costart demo $(DEMO_ARGS)

test: $(STAMP)
	@[ -n "$$COSTART_TEST_POSTGRES_URL" ] || scripts/ensure-postgres.sh >/dev/null
	@scripts/install-fuse.sh
	@[ -n "$$COSTART_CHROMIUM" ] || scripts/ensure-chromium.sh >/dev/null
	@scripts/ensure-slurm.sh >/dev/null
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/pytest -q -m "not slow" --durations=30

# The documentation site, offline, into site/ (open site/index.html); a warning fails it.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

# The larger local profile: long hypothesis runs and many crash kills.
test-slow: $(STAMP)
	COSTART_PROFILE=slow $(BIN)/pytest -q --timeout=3600

# Property and stateful tests with fresh seeds (printed; rerun one with SEED=...), for a
# bounded time. Not part of `make test`: CI keeps its fixed seeds.
EXPLORE_SECONDS ?= 900
test-explore: $(STAMP)
	@seed=$${SEED:-$$($(BIN)/python -c 'import secrets; print(secrets.randbits(32))')}; \
	echo "test-explore: seed $$seed, at most $(EXPLORE_SECONDS)s"; \
	COSTART_PROFILE=explore timeout --signal=INT $(EXPLORE_SECONDS) $(BIN)/pytest -q -p no:cacheprovider \
	  -m "not slow" --timeout=$(EXPLORE_SECONDS) --hypothesis-seed=$$seed --hypothesis-show-statistics \
	  $$(grep -rl --include='test_*.py' '^from hypothesis' tests)

# Mutation testing (not part of `make test`): one worker, niced, bounded by MUTATE_SECONDS;
# MUTANTS narrows the run (e.g. MUTANTS='costart.domain.policy*'). Results accumulate in
# mutants/ across runs (a module at a time; mutmut re-runs the mutants of changed code),
# `make mutate-clean` starts over. The report lands in bench/results/mutation.json.
MUTATE_SECONDS ?= 7200
mutate: $(STAMP)
	-COSTART_PROFILE=mutate timeout $(MUTATE_SECONDS) nice -n 15 $(BIN)/mutmut run --max-children 1 $(MUTANTS)
	$(BIN)/python bench/mutation_report.py

mutate-clean:
	rm -rf mutants

lint: $(STAMP)
	$(BIN)/ruff check .

typecheck: $(STAMP)
	$(BIN)/mypy

bench: $(STAMP)
	@for b in bench/bench_*.py; do [ -e "$$b" ] || continue; echo "== $$b"; $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache site
