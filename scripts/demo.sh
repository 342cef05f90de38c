#!/usr/bin/env bash
# `make demo`: camerad with two virtual cameras on a temporary socket, camctl
# listing, inspecting, streaming from and photographing them, then the daemon
# stopped. The photo is kept; the last line says where.
set -euo pipefail
bin=${1:?usage: demo.sh BIN_DIR}
dir=$(mktemp -d /tmp/camerad-demo.XXXXXX)
socket="$dir/camerad.sock"
export CAMERAD_SOCKET="$socket"

photo="${TMPDIR:-/tmp}/camerad-demo.jpg"

"$bin/camerad" --virtual-cameras 2 --state-dir "$dir/state" --log-level warning &
daemon=$!
trap 'kill $daemon 2>/dev/null; wait $daemon 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 100); do [ -S "$socket" ] && break; sleep 0.05; done

run() { echo; echo "\$ $*"; "$@"; }
run "$bin/camctl" list
run "$bin/camctl" info 0
run "$bin/camctl" ping --count 100
run "$bin/camctl" stream 0 --duration 3 --pixel-format nv12 --check --stats
run "$bin/camctl" snapshot 1 "$photo" --size 1280x720 --force
echo
kill -TERM $daemon
wait $daemon && echo "camerad stopped cleanly."
echo "The snapshot is $photo."
trap 'rm -rf "$dir"' EXIT
