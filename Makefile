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
	@# A barely trained BC checkpoint (20 steps; the network of make transfer) times the BC sweeps.
	@$(ENV) test -f out/bench_bc/ckpt/policy.pt || (r2s2r demos --out out/bench_bc/demos -n 2 \
		--variations config/variations.yaml --no-mcap --quiet && r2s2r train --dataset out/bench_bc/demos \
		--out out/bench_bc/ckpt --steps 20 --channels 32,32,64,64 --chunk 8 --no-head-features --quiet)
	@$(ENV) python -m r2s2r_eval.bench_render --bc-checkpoint out/bench_bc/ckpt --out out/bench_render.json

# Capture the emulated hardware, real2sim, evaluate 6 policies x 50 trials on the emulator ("real"), in
# the reconstructed world and in the bundled world, and write the comparison reports (~18 min here).
closed-loop: setup
	@$(ENV) python -m r2s2r_eval.closed_loop --out out/closed_loop

# Demonstrations across variations, behaviour cloning, and transfer to the emulated hardware for three
# ablations (no variations / six axes / real-to-sim world); `--small` is the CI-sized run.
transfer: setup
	@$(ENV) python -m r2s2r_eval.transfer --out out/transfer

lint: setup
	@$(ENV) ruff check src tests tools launch

clean:
	rm -rf build install log out
