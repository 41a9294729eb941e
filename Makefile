# Two commands do all of the set-up (see README):
#   make course   create .venv if missing, then grade the measurement and softmax exercises
#                 against the reference, write a small CPU kernel-bench report under
#                 results/local/, and end with the learner's next step: the lesson to open
#   make test     create .venv if missing, then lint and run the whole test suite
#   make test-fast  the same without the tests marked `slow` (each over about 10 s on a 2-core
#                 CPU: notebooks, the browser, whole checker and script runs), for quick edits;
#                 GPU tests (marked `gpu`) are skipped on a machine without one, saying so
#   make lab-test the tests of the past experiments archived under lab/ (not part of `make test`)
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# One pytest-xdist worker a core; the tests that share the reference's graded run (the
# `reference` group) stay on one worker. A worker that dies (out of memory, a crash) ends the
# run at once, naming the test it was running: replacing it can leave --dist loadgroup waiting
# forever (pytest-xdist issue 1378). PARALLEL= runs the suite in one process.
PARALLEL ?= -n auto --dist loadgroup --max-worker-restart=0
# JupyterLab refuses to start as root without this option (make course prints the command).
ALLOW_ROOT = $(if $(filter 0,$(shell id -u)), --allow-root)

.PHONY: course test test-fast lab-test lint exercises notebooks clean-venv

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# The CPU build of torch first, so the range in pyproject.toml installs nothing larger.
	$(BIN)/python -m pip install --quiet "torch==2.13.0"
	$(BIN)/python -m pip install --quiet -e ".[course,dev]"
	touch $(STAMP)

course: $(STAMP)
	$(BIN)/python -m learning.check measurement --reference
	$(BIN)/python -m learning.check softmax --reference
	mkdir -p results/local
	$(BIN)/kernel-bench --op softmax --device cpu --output results/local/softmax-cpu.json
	@echo "Set up: the checks above graded reference/, the course's answers, not your work."
	@echo "Next: lesson 01. Run JUPYTER_CONFIG_PATH=.jupyter $(BIN)/jupyter lab$(ALLOW_ROOT) and open lessons/01-tensors-and-bytes.ipynb"

# The 15 slowest tests are listed at the end, and each phase says how long it took, so that
# the next regression shows in the log.
test: $(STAMP)
	@start=$$(date +%s); $(BIN)/ruff check . && echo "make test: lint took $$(($$(date +%s) - start)) s"
	@start=$$(date +%s); $(BIN)/python -m pytest -q $(PARALLEL) --durations=15; status=$$?; \
		echo "make test: tests took $$(($$(date +%s) - start)) s"; exit $$status

test-fast: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q $(PARALLEL) -m "not slow"

lab-test: $(STAMP)
	$(BIN)/python -m pytest -q lab

lint: $(STAMP)
	$(BIN)/ruff check .

exercises: $(STAMP)
	$(BIN)/python scripts/make_exercises.py

notebooks: $(STAMP)
	$(BIN)/jupytext --sync lessons/*.md

clean-venv:
	rm -rf $(VENV)
