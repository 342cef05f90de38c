import CameraProtocol

extension CaptureDevice {
    /// Whether the device can focus in `mode`.
    public func isFocusModeSupported(_ mode: FocusMode) -> Bool {
        read { $0.capabilities.focusModes.compactMap(FocusMode.init).contains(mode) }
    }

    public var isFocusPointOfInterestSupported: Bool { read(\.capabilities.focusPointOfInterestSupported) }

    /// Whether the lens can be set to a position (V4L2 `FOCUS_ABSOLUTE`).
    public var isLockingFocusWithCustomLensPositionSupported: Bool { read(\.capabilities.lensPositionSupported) }

    public func isExposureModeSupported(_ mode: ExposureMode) -> Bool {
        read { $0.capabilities.exposureModes.compactMap(ExposureMode.init).contains(mode) }
    }

    public var isExposurePointOfInterestSupported: Bool { read(\.capabilities.exposurePointOfInterestSupported) }

    public func isWhiteBalanceModeSupported(_ mode: WhiteBalanceMode) -> Bool {
        read { $0.capabilities.whiteBalanceModes.compactMap(WhiteBalanceMode.init).contains(mode) }
    }

    /// Whether the device has a torch (a flash LED that can stay on).
    public var hasTorch: Bool { read(\.capabilities.supportsTorch) }

    public func isTorchModeSupported(_ mode: TorchMode) -> Bool {
        read { $0.capabilities.torchModes.compactMap(TorchMode.init).contains(mode) }
    }

    /// Whether the device has a flash for photos.
    public var hasFlash: Bool { read(\.capabilities.supportsFlash) }

    public func isFlashModeSupported(_ mode: FlashMode) -> Bool {
        read { $0.capabilities.flashModes.compactMap(FlashMode.init).contains(mode) }
    }

    /// The smallest `videoZoomFactor`: 1.
    public var minAvailableVideoZoomFactor: Double { read(\.capabilities.minZoomFactor) }
    /// The largest `videoZoomFactor`; 1 when the device cannot zoom.
    public var maxAvailableVideoZoomFactor: Double { read(\.capabilities.maxZoomFactor) }

    /// Whether `videoZoomFactor` is camerad's crop of the frame (the device has
    /// no zoom control) rather than the camera's own zoom. Linux only. MJPEG
    /// passed through unchanged is not cropped.
    public var isVideoZoomDigital: Bool { read(\.capabilities.digitalZoom) }

    /// Whether a session with this device can use `preset`. A microphone
    /// supports every preset: presets choose a camera's picture, and its sound
    /// is the same under each.
    public func supportsSessionPreset(_ preset: SessionPreset) -> Bool {
        hasMediaType(.audio) || read { $0.supportedPresets.compactMap(SessionPreset.init).contains(preset) }
    }
}
