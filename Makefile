# camerad — build, test, demo. `make test` is what CI runs (.ci/run).
SHELL := /bin/bash
.DEFAULT_GOAL := build

# Debian packages the build, the tests (the C client's: cmocka, valgrind; ffprobe reads recordings) and `make protos` need. (scripts/vivid-vm
# installs what the VM needs itself: qemu-system-x86, busybox-static, cpio.)
APT_PACKAGES := libturbojpeg0-dev libyuv-dev protobuf-compiler libv4l-dev libudev-dev v4l-utils libexif-dev \
	protobuf-c-compiler libprotobuf-c-dev libcmocka-dev valgrind libswresample-dev libavcodec-dev libavformat-dev ffmpeg libasound2-dev alsa-utils
# Python packages the Python client (Clients/python) and its tests need, for the python3 on the PATH.
PIP_PACKAGES := 'protobuf>=4.21,<6' numpy pytest setuptools wheel
PIP_MODULES := google.protobuf,numpy,pytest,setuptools,wheel
# And those `make bench` compares against.
BENCH_APT_PACKAGES := gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-bad gstreamer1.0-plugins-ugly gstreamer1.0-libav
# Warnings are errors here and in CI (dependencies' warnings are not ours: SwiftPM hides them).
SWIFT_BUILD_FLAGS := -Xswiftc -warnings-as-errors
# `swift`, with SwiftPM's temporary files kept out of /tmp (see the script).
SWIFT := scripts/swiftpm
BIN = $(shell $(SWIFT) build --show-bin-path)

.PHONY: build deps test demo bench protos docs clean

deps:
	@missing=$$(for p in $(APT_PACKAGES) $(EXTRA_APT_PACKAGES); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing missing packages:" $$missing; \
		sudo=$$([ "$$(id -u)" = 0 ] || echo sudo); \
		$$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq $$missing; \
	fi
	@python3 -c 'import $(PIP_MODULES)' 2>/dev/null || { echo "installing Python packages:" $(PIP_PACKAGES); \
		python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore $(PIP_PACKAGES); }

build: deps
	$(SWIFT) build $(SWIFT_BUILD_FLAGS)

# The host suites, then the vivid VM suite alone, each timed, then a check that
# nothing was left in the temporary folder (scripts/run-tests). Each part has
# its own time limit, so a hung test cannot hang CI.
test: deps
	$(SWIFT) build --build-tests $(SWIFT_BUILD_FLAGS)
	scripts/run-tests "$(BIN)/cameradPackageTests.xctest"

# Starts camerad with two virtual cameras on a temporary socket, shows what
# camctl sees, streams for a few seconds, and stops the daemon.
demo: build
	@scripts/demo.sh "$(BIN)"

# Fan-out figures from a release build, against GStreamer, in one run,
# and the C and Python clients' rows.
bench:
	@$(MAKE) --no-print-directory deps EXTRA_APT_PACKAGES="$(BENCH_APT_PACKAGES)"
	$(SWIFT) build -c release $(SWIFT_BUILD_FLAGS)
	$(MAKE) --no-print-directory -C Clients/c
	"$$($(SWIFT) build -c release --show-bin-path)/camerad-bench"

protos: deps
	scripts/generate-protos.sh

# CaptureKit's reference and its articles (Sources/CaptureKit/CaptureKit.docc) as
# static HTML in .build/docs/CaptureKit: serve that folder (python3 -m http.server)
# and open /CaptureKit/documentation/capturekit/. A broken link or an undocumented
# parameter fails it; make test runs it.
docs: deps
	@mkdir -p .build/docs
	$(SWIFT) package --allow-writing-to-directory .build/docs generate-documentation --target CaptureKit \
		--output-path .build/docs/CaptureKit --transform-for-static-hosting --hosting-base-path CaptureKit --warnings-as-errors

clean:
	$(SWIFT) package clean
	rm -rf .build-tools
