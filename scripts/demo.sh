#!/usr/bin/env bash
# `make demo`: camerad with two virtual cameras and a virtual microphone on a
# temporary socket, camctl listing, inspecting, streaming from and photographing
# the cameras, the microphone's level, five seconds recorded with sound (what
# ffprobe says of the file), then the daemon stopped. The photo and the movie are
# kept; the last line says where.
set -euo pipefail
bin=${1:?usage: demo.sh BIN_DIR}
dir=$(mktemp -d /tmp/camerad-demo.XXXXXX)
socket="$dir/camerad.sock"
export CAMERAD_SOCKET="$socket"

photo="${TMPDIR:-/tmp}/camerad-demo.jpg"
movie="${TMPDIR:-/tmp}/camerad-demo.mp4"

"$bin/camerad" --virtual-cameras 2 --virtual-microphones 1 --state-dir "$dir/state" --log-level warning &
daemon=$!
trap 'kill $daemon 2>/dev/null; wait $daemon 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 100); do [ -S "$socket" ] && break; sleep 0.05; done

run() { echo; echo "\$ $*"; "$@"; }
run "$bin/camctl" list
run "$bin/camctl" info 0
run "$bin/camctl" ping --count 100
run "$bin/camctl" stream 0 --duration 3 --pixel-format nv12 --check --stats
run "$bin/camctl" snapshot 1 "$photo" --size 1280x720 --force
run "$bin/camctl" levels virtual-microphone-0 --json
run "$bin/camctl" record 0 "$movie" --audio virtual-microphone-0 --duration 5 --force
run ffprobe -v error -show_entries stream=codec_type,codec_name,width,height,sample_rate,channels:format=duration -of compact=p=0:nk=0 "$movie"
echo
kill -TERM $daemon
wait $daemon && echo "camerad stopped cleanly."
echo "The snapshot is $photo; the movie, with sound, $movie."
trap 'rm -rf "$dir"' EXIT
