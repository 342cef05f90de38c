# camerad — build, test, demo. `make test` is what CI runs (.ci/run).
SHELL := /bin/bash
.DEFAULT_GOAL := build

# Debian packages the build, the tests and `make protos` need. (scripts/vivid-vm
# installs what the VM needs itself: qemu-system-x86, busybox-static, cpio.)
APT_PACKAGES := libturbojpeg0-dev libyuv-dev protobuf-compiler libv4l-dev libudev-dev v4l-utils libexif-dev
# And those `make bench` compares against.
BENCH_APT_PACKAGES := gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-bad
# Warnings are errors here and in CI (dependencies' warnings are not ours: SwiftPM hides them).
SWIFT_BUILD_FLAGS := -Xswiftc -warnings-as-errors
BIN = $(shell swift build --show-bin-path)
# A hung test must not hang CI.
TEST_TIMEOUT := 1200

.PHONY: build deps test demo bench protos clean

deps:
	@missing=$$(for p in $(APT_PACKAGES) $(EXTRA_APT_PACKAGES); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing missing packages:" $$missing; \
		sudo=$$([ "$$(id -u)" = 0 ] || echo sudo); \
		$$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq $$missing; \
	fi

build: deps
	swift build $(SWIFT_BUILD_FLAGS)

test: deps
	swift build --build-tests $(SWIFT_BUILD_FLAGS)
	timeout $(TEST_TIMEOUT) swift test --skip-build

# Starts camerad with two virtual cameras on a temporary socket, shows what
# camctl sees, streams for a few seconds, and stops the daemon.
demo: build
	@scripts/demo.sh "$(BIN)"

# Fan-out figures from a release build, against memcpy and GStreamer, in one run.
bench:
	@$(MAKE) --no-print-directory deps EXTRA_APT_PACKAGES="$(BENCH_APT_PACKAGES)"
	swift build -c release $(SWIFT_BUILD_FLAGS)
	"$$(swift build -c release --show-bin-path)/camerad-bench"

protos: deps
	scripts/generate-protos.sh

clean:
	swift package clean
	rm -rf .build-tools
