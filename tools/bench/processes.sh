#!/bin/bash
# Sourced by the benchmark scripts: stops the processes they started in the
# background. Recorders, agents and the floor detach on SIGTERM; background
# jobs of a script ignore SIGINT unless they handle it, as the benchmark does
# not.

# stop_processes PID...: SIGTERM to each, then waits for each to end.
stop_processes() {
	local pid
	for pid in "$@"; do
		kill -TERM "$pid" 2>/dev/null || true
	done
	for pid in "$@"; do
		wait "$pid" 2>/dev/null || true
	done
}
