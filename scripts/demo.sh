#!/usr/bin/env bash
# `make demo`: camerad with two virtual cameras on a temporary socket, camctl
# listing, inspecting and streaming from them, then the daemon stopped.
set -euo pipefail
bin=${1:?usage: demo.sh BIN_DIR}
dir=$(mktemp -d /tmp/camerad-demo.XXXXXX)
socket="$dir/camerad.sock"
export CAMERAD_SOCKET="$socket"

"$bin/camerad" --virtual-cameras 2 --log-level warning &
daemon=$!
trap 'kill $daemon 2>/dev/null; wait $daemon 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 100); do [ -S "$socket" ] && break; sleep 0.05; done

run() { echo; echo "\$ $*"; "$@"; }
run "$bin/camctl" list
run "$bin/camctl" info 0
run "$bin/camctl" ping --count 100
run "$bin/camctl" stream 0 --duration 3 --pixel-format nv12 --check --stats
echo
kill -TERM $daemon
wait $daemon && echo "camerad stopped cleanly."
trap 'rm -rf "$dir"' EXIT
