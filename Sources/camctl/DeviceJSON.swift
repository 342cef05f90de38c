import CaptureKit
import Foundation

/// camctl's JSON output: key names are CaptureKit's property names.
enum JSON {
    static func encode(_ value: some Encodable, pretty: Bool = true) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = pretty ? [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes] : [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }
}

/// What `camctl list --json` prints per device.
struct DeviceSummary: Encodable {
    let uniqueID: String
    let modelID: String
    let localizedName: String
    let position: String
    let deviceType: String
    /// "video" or "audio".
    let mediaType: String
    let isConnected: Bool

    init(_ device: CaptureDevice) {
        uniqueID = device.uniqueID
        modelID = device.modelID
        localizedName = device.localizedName
        position = device.position.description
        deviceType = device.deviceType.description
        mediaType = device.mediaType.description
        isConnected = device.isConnected
    }
}

/// What `camctl info --json` prints.
struct DeviceDetails: Encodable {
    struct Format: Encodable {
        let pixelFormat: String
        let pixelFormatDescription: String
        let width: Int32
        let height: Int32
        let isCompressed: Bool
        let frameRateRanges: [FrameRates]
    }

    struct FrameRates: Encodable {
        let minFrameRate: Double
        let maxFrameRate: Double
        /// "1/60": seconds as a fraction.
        let minFrameDuration: String
        let maxFrameDuration: String
    }

    struct Control: Encodable {
        struct MenuItem: Encodable {
            let index: Int64
            let name: String
            let value: Int64
        }
        let id: UInt32
        let name: String
        let displayName: String
        let type: String
        let minimum: Int64
        let maximum: Int64
        let step: UInt64
        let defaultValue: Int64
        let value: Int64
        let flags: [String]
        let menuItems: [MenuItem]

        init(_ control: CaptureDevice.Control) {
            id = control.id
            name = control.name
            displayName = control.displayName
            type = control.kind.rawValue
            minimum = control.minimum
            maximum = control.maximum
            step = control.step
            defaultValue = control.defaultValue
            value = control.value
            flags = DeviceText.flagNames(control.flags)
            menuItems = control.menuItems.map { MenuItem(index: $0.index, name: $0.name, value: $0.value) }
        }
    }

    /// The AVFoundation-named settings in force.
    struct Settings: Encodable {
        let focusMode: String?
        let lensPosition: Float?
        let focusPointOfInterest: [Double]
        let isAdjustingFocus: Bool
        let exposureMode: String?
        let exposureDuration: String
        let iso: Float
        let exposurePointOfInterest: [Double]
        let isAdjustingExposure: Bool
        let whiteBalanceMode: String?
        let whiteBalanceTemperature: Float
        let isAdjustingWhiteBalance: Bool
        let torchMode: String
        let torchLevel: Float
        let videoZoomFactor: Double

        init(_ device: CaptureDevice) {
            focusMode = device.reportedFocusMode.map { "\($0)" }
            lensPosition = device.lensPosition
            focusPointOfInterest = [Double(device.focusPointOfInterest.x), Double(device.focusPointOfInterest.y)]
            isAdjustingFocus = device.isAdjustingFocus
            exposureMode = device.reportedExposureMode.map { "\($0)" }
            exposureDuration = "\(device.exposureDuration.value)/\(device.exposureDuration.timescale)"
            iso = device.iso
            exposurePointOfInterest = [Double(device.exposurePointOfInterest.x), Double(device.exposurePointOfInterest.y)]
            isAdjustingExposure = device.isAdjustingExposure
            whiteBalanceMode = device.reportedWhiteBalanceMode.map { "\($0)" }
            whiteBalanceTemperature = device.whiteBalanceTemperature
            isAdjustingWhiteBalance = device.isAdjustingWhiteBalance
            torchMode = "\(device.torchMode)"
            torchLevel = device.torchLevel
            videoZoomFactor = device.videoZoomFactor
        }
    }

    struct Capabilities: Encodable {
        let focusModes: [String]
        let isLockingFocusWithCustomLensPositionSupported: Bool
        let isFocusPointOfInterestSupported: Bool
        let exposureModes: [String]
        let isExposurePointOfInterestSupported: Bool
        let whiteBalanceModes: [String]
        let hasTorch: Bool
        let torchModes: [String]
        let hasFlash: Bool
        let flashModes: [String]
        let minAvailableVideoZoomFactor: Double
        let maxAvailableVideoZoomFactor: Double
        let isVideoZoomDigital: Bool
        let supportedSessionPresets: [String]
    }

    let uniqueID: String
    let modelID: String
    let localizedName: String
    let manufacturer: String
    let position: String
    let deviceType: String
    let isConnected: Bool
    let unavailableReason: String?
    let devicePath: String?
    let activeFormatIndex: Int?
    let activeVideoMinFrameDuration: String
    let activeVideoMaxFrameDuration: String
    let formats: [Format]
    let controls: [Control]
    let capabilities: Capabilities
    let settings: Settings
    /// "pid 4242 (obs)" while another client holds the configuration lock.
    let configurationLockHolder: String?
    /// "video" or "audio".
    let mediaType: String
    /// A microphone's formats; nil for a camera.
    let audio: Audio?
    /// The devices physically linked to it: a webcam's camera and microphone.
    let linkedDeviceUniqueIDs: [String]
    /// A microphone's input gain, 0 to 1; nil when it has none to set (and for a camera).
    let inputGain: Float?

    struct Audio: Encodable {
        struct Format: Encodable {
            let sampleRate: Int
            let channels: Int
            let sampleFormat: String
            let framesPerPeriod: Int
        }
        let native: Format
        let sampleRates: [Int]
        let maxChannels: Int
        let sampleFormats: [String]
        let minPeriodMicroseconds: Int64
        let maxPeriodMicroseconds: Int64

        init(_ audio: AudioCapabilities) {
            native = Format(sampleRate: audio.native.sampleRate, channels: audio.native.channels,
                            sampleFormat: audio.native.sampleFormat.rawValue, framesPerPeriod: audio.native.framesPerPeriod)
            sampleRates = audio.sampleRates
            maxChannels = audio.maxChannels
            sampleFormats = audio.sampleFormats.map(\.rawValue)
            minPeriodMicroseconds = audio.periodDurations.lowerBound.microseconds
            maxPeriodMicroseconds = audio.periodDurations.upperBound.microseconds
        }
    }

    init(_ device: CaptureDevice) {
        func names<T>(_ all: [T], _ supported: (T) -> Bool) -> [String] {
            all.filter(supported).map { String(describing: $0) }
        }
        func fraction(_ time: CMTime) -> String { "\(time.value)/\(time.timescale)" }

        uniqueID = device.uniqueID
        modelID = device.modelID
        localizedName = device.localizedName
        manufacturer = device.manufacturer
        position = device.position.description
        deviceType = device.deviceType.description
        isConnected = device.isConnected
        unavailableReason = device.unavailableReason
        devicePath = device.devicePath
        let allFormats = device.formats
        activeFormatIndex = allFormats.firstIndex(of: device.activeFormat)
        activeVideoMinFrameDuration = fraction(device.activeVideoMinFrameDuration)
        activeVideoMaxFrameDuration = fraction(device.activeVideoMaxFrameDuration)
        formats = allFormats.map { format in
            Format(
                pixelFormat: format.v4l2PixelFormat.description,
                pixelFormatDescription: format.pixelFormatDescription,
                width: format.dimensions.width, height: format.dimensions.height,
                isCompressed: format.isCompressed,
                frameRateRanges: format.videoSupportedFrameRateRanges.map {
                    FrameRates(minFrameRate: $0.minFrameRate, maxFrameRate: $0.maxFrameRate,
                               minFrameDuration: fraction($0.minFrameDuration),
                               maxFrameDuration: fraction($0.maxFrameDuration))
                })
        }
        controls = device.controls.map(Control.init)
        settings = Settings(device)
        configurationLockHolder = device.configurationLockHolder?.description
        mediaType = device.mediaType.description
        audio = device.audioCapabilities.map(Audio.init)
        linkedDeviceUniqueIDs = device.linkedDeviceUniqueIDs
        inputGain = device.isInputGainSettable ? device.inputGain : nil
        capabilities = Capabilities(
            focusModes: names(CaptureDevice.FocusMode.allCases, device.isFocusModeSupported),
            isLockingFocusWithCustomLensPositionSupported: device.isLockingFocusWithCustomLensPositionSupported,
            isFocusPointOfInterestSupported: device.isFocusPointOfInterestSupported,
            exposureModes: names(CaptureDevice.ExposureMode.allCases, device.isExposureModeSupported),
            isExposurePointOfInterestSupported: device.isExposurePointOfInterestSupported,
            whiteBalanceModes: names(CaptureDevice.WhiteBalanceMode.allCases, device.isWhiteBalanceModeSupported),
            hasTorch: device.hasTorch,
            torchModes: names(CaptureDevice.TorchMode.allCases, device.isTorchModeSupported),
            hasFlash: device.hasFlash,
            flashModes: names(CaptureDevice.FlashMode.allCases, device.isFlashModeSupported),
            minAvailableVideoZoomFactor: device.minAvailableVideoZoomFactor,
            maxAvailableVideoZoomFactor: device.maxAvailableVideoZoomFactor,
            isVideoZoomDigital: device.isVideoZoomDigital,
            supportedSessionPresets: names(SessionPreset.allCases, device.supportsSessionPreset))
    }
}

/// What `camctl watch --json` prints per event.
struct DeviceEventJSON: Encodable {
    let event: String
    let timestampNanoseconds: Int64
    let device: DeviceSummary

    init(_ event: CaptureDevice.Event) {
        self.event = event.kind.rawValue
        timestampNanoseconds = event.timestampNanoseconds
        device = DeviceSummary(event.device)
    }
}
