@testable import CameraDaemon
import CameraMedia
import CameraProtocol
import Testing

@Suite struct ModeSelectionTests {
    let formats = VirtualCamera.standardFormats
    var active: CaptureMode { VirtualCamera(index: 0).activeMode }

    func pick(_ preset: Camerad_V1_SessionPreset) -> String {
        let mode = ModeSelection.mode(for: try! SessionPreset(preset), formats: formats, active: active)
        return "\(mode.format.pixelFormat.code) \(mode.format.width)x\(mode.format.height) 1/\(mode.frameDuration.denominator)"
    }

    @Test func presetsPickModesByTheDocumentedRule() {
        #expect(pick(.inputPriority) == "YUYV 640x480 1/30", "the active mode")
        #expect(pick(.unspecified) == "YUYV 640x480 1/30")
        #expect(pick(.hd1280X720) == "YUYV 1280x720 1/30", "exact size; the active pixel format first")
        #expect(pick(.hd1920X1080) == "YUYV 1920x1080 1/30")
        #expect(pick(.hd4K3840X2160) == "YUYV 1920x1080 1/30", "no larger format: the largest")
        #expect(pick(.high) == "YUYV 1920x1080 1/30")
        #expect(pick(.photo) == "YUYV 1920x1080 1/30")
        #expect(pick(.medium) == "YUYV 640x480 1/30", "the smallest of at least 480x360")
        #expect(pick(.low) == "YUYV 640x480 1/30")
    }

    @Test func mjpegComesLastAndNV12BeforeYUYVWhenTheActiveFormatIsNeither() {
        let mjpegActive = CaptureMode(formatIndex: 6, format: formats[6], frameDuration: .seconds(1, per: 30))
        let mode = ModeSelection.mode(for: .hd1280x720, formats: formats, active: mjpegActive)
        #expect(mode.format.pixelFormat == .mjpeg, "the active pixel format wins")
        let onlyOthers = formats.filter { $0.pixelFormat != .yuyv }
        let chosen = ModeSelection.mode(for: .hd1280x720, formats: onlyOthers, active: active)
        #expect(chosen.format.pixelFormat == .nv12)
    }

    @Test func aFrameDurationTheFormatCannotDoFallsBack() {
        let fast = CaptureMode(formatIndex: 0, format: formats[0], frameDuration: .seconds(1, per: 60))
        let mode = ModeSelection.mode(for: .hd1920x1080, formats: formats, active: fast)
        #expect(mode.frameDuration.denominator == 30, "1080p tops out at 30 fps")
    }
}

@Suite struct StreamOptionsTests {
    let mode = VirtualCamera(index: 0).activeMode  // YUYV 640x480

    func options(_ change: (inout Camerad_V1_OutputSettings) -> Void, preset: Camerad_V1_SessionPreset = .unspecified) throws -> StreamOptions {
        var open = Camerad_V1_OpenStream()
        change(&open.settings)
        open.preset = preset
        return try StreamOptions(StreamRequest(open), mode: mode)
    }

    @Test func sizesComeFromTheSettingsThePresetOrTheDevice() throws {
        #expect(try options { _ in }.variant == FrameVariant(format: .yuyv, width: 640, height: 480))
        #expect(try options({ _ in }, preset: .low).variant.width == 192)
        #expect(try options { $0.width = 320 }.variant.height == 240, "one side: the device's aspect ratio")
        #expect(try options { $0.height = 90 }.variant.width == 120)
    }

    @Test func portraitSwapsTheSize() throws {
        let turned = try options {
            $0.orientation = .portrait
            $0.width = 320
            $0.height = 240
            $0.pixelFormat = .nv12
        }.variant
        #expect((turned.width, turned.height) == (240, 320))
        #expect(turned.rotation == .clockwise90)
        #expect(try options { $0.orientation = .landscapeLeft }.variant.rotation == .clockwise180)
        #expect(try options { $0.orientation = .portraitUpsideDown }.variant.rotation == .clockwise270)
    }

    @Test func defaultsFollowAVFoundation() throws {
        let defaults = try options { _ in }
        #expect(defaults.policy.alwaysDiscardsLate)
        #expect(defaults.policy.maxInFlight == 3)
        #expect(defaults.policy.minDurationNanoseconds == 0)
        #expect(!defaults.inline)
        #expect(defaults.slotsHeld == 3)
        let queueing = try options { $0.alwaysDiscardsLateVideoFrames = false }
        #expect(queueing.slotsHeld == 3 + SubscriptionPolicy.queueLimit)
    }

    @Test func impossibleSettingsAreRefused() {
        #expect(throws: CameraError.self) { try options { $0.pixelFormat = .nv12; $0.width = 321; $0.height = 240 } }
        #expect(throws: CameraError.self) { try options { $0.maxFramesInFlight = 9 } }
        #expect(throws: CameraError.self) { try options { $0.width = 9000 } }
        let zeroDenominator = #expect(throws: CameraError.self) {
            try options { $0.minFrameDuration.numerator = 1 }
        }
        #expect(zeroDenominator?.code == .invalidArgument)
    }
}
