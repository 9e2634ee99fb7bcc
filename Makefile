# r2s2r: the two set-up commands are `make demo` and `make test`; both run `make setup` first.
SHELL := /bin/bash
ENV := source ./env.sh &&
# Isolated DDS for everything make starts: tests pick their own ROS_DOMAIN_IDs on top of this.
export ROS_AUTOMATIC_DISCOVERY_RANGE ?= LOCALHOST
export MUJOCO_GL ?= egl

.PHONY: setup demo test test-fast bench closed-loop transfer soak lint typecheck check clean

setup:
	@bash tools/setup.sh

demo: setup
	@$(ENV) r2s2r demo

# Tests also install the real ROS 2 launch system and `ros2` CLI from ../shared when it is present
# (tools/setup_tests.sh); the product itself never needs them.
# The suite runs on every core (pytest-xdist; each test's DDS domain is its own) and names its slowest tests.
# `make test-fast` is the edit-test loop: no DDS processes, no whole studies (markers in pyproject.toml).
# Bytecode is cached (in gitignored __pycache__) even where PYTHONDONTWRITEBYTECODE is set: each of the
# suite's hundreds of node processes and both workers' collections would compile the packages again.
PYTEST_WORKERS ?= auto
PYTEST := $(ENV) PYTHONDONTWRITEBYTECODE= python -m pytest tests -n $(PYTEST_WORKERS) --dist worksteal
test: setup
	@bash tools/setup_tests.sh
	@$(PYTEST) --durations=25

test-fast: setup
	@bash tools/setup_tests.sh
	@$(PYTEST) -m "not integration and not study"

# Each benchmark measures against a baseline run side by side in the same process/run (ratios).
bench: setup
	@$(ENV) python -m r2s2r_sim.bench.sim --out out/bench.json
	@$(ENV) python -m r2s2r_sim.bench.variations
	@$(ENV) python -m r2s2r_eval.bench.sweep --out out/bench_sweep.json
	@$(ENV) python -m r2s2r_capture.bench.recorder --out out/bench_recorder.json
	@# A barely trained BC checkpoint (20 steps; the network of make transfer) times the BC sweeps.
	@$(ENV) test -f out/bench_bc/ckpt/policy.pt || (r2s2r demos --out out/bench_bc/demos -n 2 \
		--variations config/variations.yaml --no-mcap --quiet && r2s2r train --dataset out/bench_bc/demos \
		--out out/bench_bc/ckpt --steps 20 --channels 32,32,64,64 --chunk 8 --no-head-features --quiet)
	@$(ENV) python -m r2s2r_eval.bench.render --bc-checkpoint out/bench_bc/ckpt --out out/bench_render.json

# Capture the emulated hardware, real2sim, evaluate 6 policies x 50 trials on the emulator ("real"), in
# the reconstructed world and in the bundled world, and write the comparison reports (~18 min here).
closed-loop: setup
	@$(ENV) r2s2r closed-loop --out out/closed_loop

# Demonstrations across variations, behaviour cloning, and transfer to the emulated hardware for three
# ablations (no variations / six axes / real-to-sim world); `--small` is the CI-sized run.
transfer: setup
	@$(ENV) r2s2r transfer --out out/transfer

# Unattended operation: sim lockstep episodes, then real mode with the emulated hardware on the wall clock,
# each node's RSS/CPU, topic rates, lockstep waits, watchdog events and episodes sampled into out/soak.json
# with a summary. Resumable: run it again and it goes on where it stopped (make soak SIM_MINUTES=10 ...).
SIM_MINUTES ?= 120
REAL_MINUTES ?= 60
soak: setup
	@$(ENV) nice python -m r2s2r_eval.studies.soak --modes sim --minutes $(SIM_MINUTES) --out out/soak.json
	@$(ENV) nice python -m r2s2r_eval.studies.soak --modes real --minutes $(REAL_MINUTES) --out out/soak.json

# `make check` is what CI runs before the tests: lint (ruff, its formatter, the import contracts) and types.
lint: setup
	@$(ENV) ruff check src tests tools launch
	@$(ENV) ruff format --check src tests tools launch
	@$(ENV) lint-imports --no-cache

typecheck: setup
	@$(ENV) mypy

check: lint typecheck

clean:
	rm -rf build install log out
