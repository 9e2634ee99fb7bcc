# r2s2r: the two set-up commands are `make demo` and `make test`; both run `make setup` first.
SHELL := /bin/bash
ENV := source ./env.sh &&
# Isolated DDS for everything make starts: tests pick their own ROS_DOMAIN_IDs on top of this.
export ROS_AUTOMATIC_DISCOVERY_RANGE ?= LOCALHOST
export MUJOCO_GL ?= egl

.PHONY: setup demo test test-fast bench closed-loop transfer lint clean

setup:
	@bash tools/setup.sh

demo: setup
	@$(ENV) r2s2r demo

test: setup
	@$(ENV) python -m pytest tests

test-fast: setup
	@$(ENV) python -m pytest tests -m "not integration"

# Each benchmark measures against a baseline run side by side in the same process/run (ratios).
bench: setup
	@$(ENV) python -m r2s2r_sim.bench --out out/bench.json
	@$(ENV) python -m r2s2r_sim.variations.bench
	@$(ENV) python -m r2s2r_eval.bench_sweep --out out/bench_sweep.json
	@$(ENV) python -m r2s2r_capture.bench_recorder --json out/bench_recorder.json

# Capture the emulated hardware, real2sim, evaluate 6 policies x 50 trials on the emulator ("real"), in
# the reconstructed world and in the bundled world, and write the comparison reports (~18 min here).
closed-loop: setup
	@$(ENV) r2s2r closed-loop --out out/closed_loop

# Demonstrations across variations, behaviour cloning, and transfer to the emulated hardware for three
# ablations (no variations / six axes / real-to-sim world); `--small` is the CI-sized run.
transfer: setup
	@$(ENV) r2s2r transfer --out out/transfer

lint: setup
	@$(ENV) ruff check src tests tools launch

clean:
	rm -rf build install log out
