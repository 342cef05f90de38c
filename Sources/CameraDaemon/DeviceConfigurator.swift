import CameraMedia
import Logging

/// Carries out a ``DeviceConfiguration`` on a device: the format and
/// frame durations, then the AVFoundation-named settings, then the controls.
/// Everything is checked before anything is applied.
///
/// Serves ConfigureDevice (under the lock) and the stored defaults applied when
/// a device connects.
struct DeviceConfigurator: Sendable {
    let registry: DeviceRegistry
    let defaults: DefaultsStore?
    let logger: Logger
    /// The torches and modes clients' configurations hold, until their connections end.
    let claims = ConfigurationClaims()

    /// Applies `configuration` on the device's executor; with `persist`, also
    /// stores it as the device's default. A running capture restarts in a new
    /// mode. A torch it lights, and a mode it sets without `persist`, are
    /// `connection`'s until that connection ends (``ConfigurationClaims``).
    ///
    /// - Throws: ``CameraError``: `INVALID_ARGUMENT`, `UNSUPPORTED_FORMAT`,
    ///   `INVALID_STATE` (the defaults not writable).
    func apply(
        _ configuration: DeviceConfiguration, to device: any CameraBackend, persist: Bool = false, by connection: UInt64? = nil
    ) async throws {
        let mode = try await device.executor.run { try applyToDevice(configuration, device) }
        if let connection {
            claims.record(configuration, setsMode: mode != nil, persisted: persist, on: device.uniqueID, by: connection)
        }
        if let mode, let streamer = registry.streamer(device.uniqueID), streamer.runningMode != nil {
            try await streamer.switchMode(to: mode)
            registry.deviceDidChange(device)
        }
        if persist {
            guard let defaults else {
                throw CameraError(.invalidState, "applied, but not stored: this camerad runs without a state directory")
            }
            // The file is written on the device's executor, after the device's own work.
            try await device.executor.run { try defaults.store(configuration, for: device.uniqueID) }
        }
    }

    /// Checks everything, then sets the device's mode (not yet its running
    /// capture's), its controls and what camerad keeps beside them.
    ///
    /// - Returns: the new mode, if the configuration names one.
    private func applyToDevice(_ configuration: DeviceConfiguration, _ device: any CameraBackend) throws -> CaptureMode? {
        let streamer = registry.streamer(device.uniqueID)
        let running = streamer?.runningMode
        let mode = try Self.mode(configuration, on: device, current: running ?? device.activeMode)
        let controls = device.controls
        let plan = try CameraSettingsMapping.plan(configuration, controls: controls, capabilities: device.capabilities,
                                                  of: device.uniqueID)
        let values = plan.controls + configuration.controls
        let changes = values.isEmpty ? [] : try ControlChange.resolve(values, among: controls, of: device.uniqueID)
        guard mode != nil || !changes.isEmpty || plan.focusPointOfInterest != nil || plan.exposurePointOfInterest != nil
            || plan.digitalZoom != nil
        else {
            throw CameraError(.invalidArgument, "nothing to change on \(device.uniqueID); give a format, a frame rate, a mode or a control")
        }

        if let mode { try device.configure(mode) }
        if !changes.isEmpty { try device.setControls(changes) }
        device.settingsState.apply(plan)
        registry.deviceDidChange(device)
        let settling = device.settingsState.settling
        if plan.adjusts && settling > .zero {
            // Watchers see the adjusting end.
            registry.timers.schedule(after: .nanoseconds(settling.nanoseconds) + .milliseconds(1)) {
                registry.deviceDidChange(device)
            }
        }
        return mode
    }

    /// A client's connection ended: the torches it lit go off, and the devices
    /// whose mode it set choose by preset again (or by their stored mode). A
    /// capture running in that mode runs on; the next start is the preset's.
    func connectionEnded(_ connection: UInt64) async {
        let (torches, modes) = claims.take(connection)
        for uniqueID in torches {
            guard let device = registry.device(uniqueID) else { continue }
            await device.executor.run {
                let off = CameraSettingsMapping.torchOff(device.controls)
                guard !off.isEmpty else { return }
                do {
                    try device.setControls(try ControlChange.resolve(off, among: device.controls, of: device.uniqueID))
                    logger.info("\(uniqueID): the torch went off with the client that lit it")
                } catch {
                    logger.warning("\(uniqueID): turning the torch off failed: \(error)")
                }
            }
            registry.deviceDidChange(device)
        }
        for uniqueID in modes {
            guard let device = registry.device(uniqueID) else { continue }
            await device.executor.run {
                device.clearConfiguredMode()
                do {
                    if let stored = try defaults?.configuration(for: uniqueID),
                       let mode = try Self.mode(stored, on: device, current: device.activeMode) {
                        try device.configure(mode)
                    }
                } catch {
                    logger.warning("\(uniqueID): its stored mode was not restored: \(error)")
                }
            }
            registry.deviceDidChange(device)
        }
    }

    /// Applies a device's stored defaults as it connects, on its executor; a
    /// failure is logged, never fatal.
    func restoreDefaults(of device: any CameraBackend) {
        do {
            guard let stored = try defaults?.configuration(for: device.uniqueID) else { return }
            // A device that has just connected runs no capture: nothing to restart.
            _ = try applyToDevice(stored, device)
            logger.info("\(device.uniqueID): stored defaults applied")
        } catch let error as CameraError {
            logger.warning("\(device.uniqueID): stored defaults not applied: \(error.message); change them with 'camctl set \(device.uniqueID) ... --persist'")
        } catch {
            logger.warning("\(device.uniqueID): stored defaults not applied: \(error)")
        }
    }

    /// The mode a configuration asks for; nil when it names no format or frame duration.
    ///
    /// - Throws: `UNSUPPORTED_FORMAT` for a format the device lacks or camerad
    ///   cannot read; `INVALID_ARGUMENT` naming the valid ranges for a frame
    ///   duration outside them.
    static func mode(
        _ configuration: DeviceConfiguration, on device: any CameraBackend, current: CaptureMode
    ) throws -> CaptureMode? {
        let minimum = configuration.activeMinFrameDuration
        let maximum = configuration.activeMaxFrameDuration
        guard configuration.activeFormat != nil || minimum != nil || maximum != nil else { return nil }
        let formats = device.formats
        var index = current.formatIndex
        if let wanted = configuration.activeFormat {
            let name = "\(wanted.pixelFormat.code) \(wanted.width)x\(wanted.height)"
            guard let found = formats.firstIndex(where: { $0.matches(wanted.pixelFormat, wanted.width, wanted.height) }) else {
                throw CameraError(.unsupportedFormat, "\(device.uniqueID) has no format \(name); 'camctl info \(device.uniqueID)' lists its formats")
            }
            guard formats[found].isStreamable else {
                throw CameraError(.unsupportedFormat, "camerad cannot read \(name) frames; pick a YUYV, NV12, YU12, AR24 or MJPG format")
            }
            index = found
        }
        let format = formats[index]
        for duration in [minimum, maximum].compactMap({ $0 }) {
            guard duration.isValid, format.allows(duration) else {
                throw CameraError(.invalidArgument,
                                  "frame duration \(duration) s is outside what \(format) allows: \(Self.describe(format.frameRateRanges))")
            }
        }
        if let minimum, let maximum, FrameDuration.compare(minimum, maximum) > 0 {
            throw CameraError(.invalidArgument, "the minimum frame duration is longer than the maximum; swap them")
        }
        // A device makes frames at one rate: the minimum duration, the highest rate asked.
        let duration = minimum ?? maximum ?? ModeSelection.frameDuration(for: format, preferring: current.frameDuration)
        return CaptureMode(formatIndex: index, format: format, frameDuration: duration)
    }

    /// "1/60 to 1/1 s, 1/15 s".
    static func describe(_ ranges: [FrameRateRange]) -> String {
        ranges.isEmpty ? "no frame rates" : ranges.map(\.description).joined(separator: ", ")
    }
}
