import CameraProtocol
import Foundation
import Synchronization

/// AVCaptureConnection: links a session's input to one of its outputs, and says
/// how that output's frames are turned and mirrored.
///
/// Changes while the session runs take effect at once (the output's stream is
/// reopened), or at `commitConfiguration()` inside a configuration block.
public final class CaptureConnection: @unchecked Sendable {
    /// AVCaptureVideoOrientation, with Apple's values. A camera's own orientation is
    /// `.landscapeRight`: frames as the device gives them. `.portrait` turns them 90°
    /// clockwise, `.landscapeLeft` 180°, `.portraitUpsideDown` 270°.
    public enum VideoOrientation: Int, CaseIterable, Sendable {
        case portrait = 1
        case portraitUpsideDown = 2
        case landscapeRight = 3
        case landscapeLeft = 4

        var proto: Camerad_V1_VideoOrientation {
            switch self {
            case .portrait: .portrait
            case .portraitUpsideDown: .portraitUpsideDown
            case .landscapeRight: .landscapeRight
            case .landscapeLeft: .landscapeLeft
            }
        }
    }

    private struct State {
        var videoOrientation = VideoOrientation.landscapeRight
        var isVideoMirrored = false
        var adjustsMirroring = false
        var isEnabled = true
        var modeNote: String?
        var audioChannels: [CaptureAudioChannel] = []
        /// The levels watch of the run under way.
        var levels: Task<Void, Never>?
    }
    private let state = Mutex(State())
    weak var session: CaptureSession?
    public let input: CaptureDeviceInput
    public unowned let output: CaptureOutput

    init(input: CaptureDeviceInput, output: CaptureOutput, session: CaptureSession) {
        self.input = input
        self.output = output
        self.session = session
    }

    /// Set while the output's frames are made from a device mode other than the
    /// session preset asked, saying why and how ("the device runs YUYV 1280x720
    /// at 30.0 fps for another client; you get NV12 640x480"): on Linux the
    /// device may be shared, and runs one mode. Nil when the preset got its way.
    public var modeNote: String? { state.withLock { $0.modeNote } }

    func setModeNote(_ note: String) {
        state.withLock { $0.modeNote = note.isEmpty ? nil : note }
    }

    /// Every orientation is supported: the daemon turns frames itself.
    public var isVideoOrientationSupported: Bool { true }
    public var isVideoMirroringSupported: Bool { true }

    public var videoOrientation: VideoOrientation {
        get { state.withLock { $0.videoOrientation } }
        set { update { $0.videoOrientation = newValue } }
    }

    /// AVCaptureConnection.videoRotationAngle: how far the frames are turned,
    /// in degrees clockwise — 0 (the camera's own, `.landscapeRight`), 90
    /// (`.portrait`), 180 (`.landscapeLeft`), 270 (`.portraitUpsideDown`).
    /// Another spelling of ``videoOrientation``.
    public var videoRotationAngle: CGFloat {
        get {
            switch videoOrientation {
            case .landscapeRight: 0
            case .portrait: 90
            case .landscapeLeft: 180
            case .portraitUpsideDown: 270
            }
        }
        set {
            precondition(isVideoRotationAngleSupported(newValue),
                         "videoRotationAngle \(newValue) is not 0, 90, 180 or 270: check isVideoRotationAngleSupported first")
            videoOrientation = switch Int(newValue) {
            case 90: .portrait
            case 180: .landscapeLeft
            case 270: .portraitUpsideDown
            default: .landscapeRight
            }
        }
    }

    /// Whether frames can be turned by `angle`: any multiple of 90° from 0 to 270.
    public func isVideoRotationAngleSupported(_ angle: CGFloat) -> Bool {
        [0, 90, 180, 270].contains(angle)
    }

    /// Flipped left to right, after rotation.
    public var isVideoMirrored: Bool {
        get { state.withLock { $0.isVideoMirrored } }
        set { update { $0.isVideoMirrored = newValue } }
    }

    /// AVCaptureConnection.automaticallyAdjustsVideoMirroring: when set true,
    /// ``isVideoMirrored`` follows the device — a front camera's frames
    /// mirrored, as a selfie shows, a back camera's not. Default false (Apple's
    /// is true), so that setting ``isVideoMirrored`` needs nothing first.
    public var automaticallyAdjustsVideoMirroring: Bool {
        get { state.withLock { $0.adjustsMirroring } }
        set {
            update { state in
                state.adjustsMirroring = newValue
                if newValue { state.isVideoMirrored = input.device.position == .front }
            }
        }
    }

    /// AVCaptureConnection.audioChannels: a microphone's channels and their
    /// levels, which follow the microphone (computed once in camerad for every
    /// process, a reading every 100 ms) while the session runs, from the first
    /// time they are read in a run (−160 until the first reading comes) — an
    /// audio data output's connection or a movie output's audio one. Empty for video.
    public var audioChannels: [CaptureAudioChannel] {
        guard let native = input.device.audioCapabilities?.native else { return [] }
        followLevelsIfNeeded()
        return channels(native.channels)
    }

    /// Follows the microphone's levels into the channels from the first time
    /// they are read in a run (camerad computes them only while someone
    /// watches) until the run ends (``stopFollowingLevels()``).
    private func followLevelsIfNeeded() {
        guard isActive else { return }
        let started = state.withLock { state -> Bool in
            guard state.levels == nil else { return false }
            state.levels = Task { await self.followLevels() }
            return true
        }
        // A run that stopped meanwhile stops it again.
        if started && !isActive { stopFollowingLevels() }
    }

    /// The run ended: the levels stop following the microphone.
    func stopFollowingLevels() {
        state.withLock { state in defer { state.levels = nil }; return state.levels }?.cancel()
    }

    private func channels(_ count: Int) -> [CaptureAudioChannel] {
        state.withLock { state in
            if state.audioChannels.count != count {
                state.audioChannels = (0..<count).map { _ in CaptureAudioChannel() }
            }
            return state.audioChannels
        }
    }

    /// Follows the microphone's levels into ``audioChannels`` until cancelled
    /// (its session stops) or the microphone goes.
    private func followLevels() async {
        var request = Camerad_V1_WatchAudioLevelsRequest()
        request.uniqueID = input.device.uniqueID
        let channels = self.channels(input.device.audioCapabilities?.native.channels ?? 0)
        guard let client = try? await DaemonClient.shared.connection(),
              let readings = try? client.serverStreaming(CameraService.watchAudioLevels, request) else { return }
        do {
            for try await reading in readings {
                for (channel, level) in zip(channels, reading.channels) {
                    channel.set(average: level.averagePowerLevel, peak: level.peakHoldLevel)
                }
            }
        } catch {}
    }

    /// A disabled connection gets no frames; its output's stream closes.
    public var isEnabled: Bool {
        get { state.withLock { $0.isEnabled } }
        set { update { $0.isEnabled = newValue } }
    }

    /// Whether frames flow now: enabled, and its session running.
    public var isActive: Bool { isEnabled && (session?.isRunning ?? false) }

    private func update(_ change: (inout State) -> Void) {
        state.withLock { change(&$0) }
        session?.configurationDidChange()
    }
}

/// AVCaptureAudioChannel: one channel of a microphone's connection, its
/// levels in dBFS as AVFoundation defines them (0 for a full-scale square
/// wave, −160 for silence).
public final class CaptureAudioChannel: Sendable {
    private let levels = Mutex((average: Float(-160), peak: Float(-160)))

    /// The RMS power of the last 100 ms.
    public var averagePowerLevel: Float { levels.withLock { $0.average } }
    /// The highest sample's level over the last second.
    public var peakHoldLevel: Float { levels.withLock { $0.peak } }

    func set(average: Float, peak: Float) {
        levels.withLock { $0 = (average, peak) }
    }
}
