# The two commands of the README.
.PHONY: setup demo test test-fast bench images

setup:
	bash scripts/setup.sh

# Sets everything up and runs the main job on the embedded default; ends with a score table and a report.
demo: setup
	.venv/bin/spatialact demo
	@echo "To run the README's commands yourself: source .venv/bin/activate (then spatialact --help), or call .venv/bin/spatialact"

# Sets everything up and runs the tests, one process per CPU (a test file's tests stay in one process, so its
# module fixtures run once).
test: setup
	.venv/bin/python -m pytest -q -n auto --dist loadfile

# The edit-test loop: everything but the slow tests (the README's and docs' commands, notebooks, whole suites).
test-fast: setup
	.venv/bin/python -m pytest -q -n auto --dist loadfile -m "not slow"

bench: setup
	.venv/bin/python benchmarks/run_all.py

# Re-makes every picture of the README and docs from the commands beside them (the game pictures need the game extra).
images: setup
	.venv/bin/python scripts/make_readme_images.py
