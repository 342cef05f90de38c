import CameraIPC

/// What a client's configuration holds on a device once its lock is let go:
/// a torch it lit, a mode it set without `--persist`. Both are the client's
/// for as long as its connection lasts — iOS turns an app's torch off when the
/// app quits, and an app's format does not bind the next app — so when the
/// connection ends, the torch goes off and the device chooses its mode by
/// preset again (or by the mode stored with `--persist`): ``DeviceConfigurator/connectionEnded(_:)``.
/// A later client's change takes the claim over.
final class ConfigurationClaims: Sendable {
    private struct Claims {
        /// Device uniqueID → the connection whose torch shines there.
        var torches: [String: UInt64] = [:]
        /// Device uniqueID → the connection whose mode the device keeps.
        var modes: [String: UInt64] = [:]
    }

    private let claims = OrderedMutex(.configurationClaims, Claims())

    /// A configuration applied by `connection`: a torch lit (or put out), a
    /// mode set (stored with `--persist`: nobody's).
    func record(_ configuration: DeviceConfiguration, setsMode: Bool, persisted: Bool, on device: String, by connection: UInt64) {
        claims.withLock { claims in
            if configuration.torchMode == .off {
                claims.torches[device] = nil
            } else if configuration.torchMode == .on || configuration.torchLevel != nil {
                claims.torches[device] = connection
            }
            if setsMode { claims.modes[device] = persisted ? nil : connection }
        }
    }

    /// Takes what `connection` held: the devices whose torch it lit and whose mode it set.
    func take(_ connection: UInt64) -> (torches: [String], modes: [String]) {
        claims.withLock { claims in
            let torches = claims.torches.filter { $0.value == connection }.keys.sorted()
            let modes = claims.modes.filter { $0.value == connection }.keys.sorted()
            for device in torches { claims.torches[device] = nil }
            for device in modes { claims.modes[device] = nil }
            return (torches, modes)
        }
    }
}
