#!/usr/bin/env bash
# Regenerates the committed code from Protos/camerad/v1/*.proto.
#
# Uses Debian's protoc (3.21) and protoc-gen-swift built from swift-protobuf 1.39.0,
# the same version Package.swift depends on, so the output matches the runtime.
# Records the hash of every .proto beside the generated code; CameraProtocolTests
# fails when a .proto changes without this script being run.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

protobuf_version=1.39.0
tools="$root/.build-tools"
plugin="$tools/release/protoc-gen-swift"

command -v protoc >/dev/null || { echo "protoc is missing: run 'make deps' (apt: protobuf-compiler)" >&2; exit 1; }

if [ ! -x "$plugin" ]; then
    src="$tools/swift-protobuf-$protobuf_version"
    if [ ! -d "$src" ]; then
        git clone --quiet --depth 1 --branch "$protobuf_version" https://github.com/apple/swift-protobuf "$src"
    fi
    echo "building protoc-gen-swift $protobuf_version (about a minute, once)"
    "$root/scripts/swiftpm" build -c release --product protoc-gen-swift --package-path "$src" --scratch-path "$tools"
fi

protos=$(cd Protos && find camerad -name '*.proto' | sort)
out=Sources/CameraProtocol/Generated
rm -rf "$out"
mkdir -p "$out"
# shellcheck disable=SC2086
protoc --proto_path=Protos \
    --plugin=protoc-gen-swift="$plugin" \
    --swift_out="$out" \
    --swift_opt=Visibility=Public \
    --swift_opt=FileNaming=PathToUnderscores \
    $protos

(cd Protos && sha256sum $protos) > "$out/proto-hashes.txt"
echo "generated $(ls "$out"/*.swift | wc -l) Swift files in $out"
