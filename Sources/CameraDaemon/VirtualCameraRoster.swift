import CameraProtocol

/// Adds and removes the daemon's virtual cameras, keeping their indices unique.
struct VirtualCameraRoster: Sendable {
    /// Indices run from 0 to 63.
    static let maxCount = 64

    let registry: DeviceRegistry

    /// Adds `virtual-<index>`, at the lowest free index when none is given.
    ///
    /// - Throws: `ALREADY_EXISTS` for a taken index, `INVALID_ARGUMENT` for one out
    ///   of range, `RESOURCE_EXHAUSTED` when all are taken.
    @discardableResult
    func add(index: Int? = nil, localizedName: String = "", position: Camerad_V1_Position = .unspecified) throws -> VirtualCamera {
        if let index {
            guard (0..<Self.maxCount).contains(index) else {
                throw RPCError(.invalidArgument, "virtual camera index \(index) is out of range; use 0 to \(Self.maxCount - 1)")
            }
            let camera = VirtualCamera(index: index, localizedName: localizedName, position: position)
            try registry.add(camera)
            return camera
        }
        // Another add may take the index we picked; then pick again.
        while true {
            let taken = Set(registry.devices.compactMap { ($0 as? VirtualCamera)?.index })
            guard let free = (0..<Self.maxCount).first(where: { !taken.contains($0) }) else {
                throw RPCError(.resourceExhausted, "all \(Self.maxCount) virtual cameras exist; remove one first")
            }
            let camera = VirtualCamera(index: free, localizedName: localizedName, position: position)
            do {
                try registry.add(camera)
                return camera
            } catch let error as RPCError where error.reason == .alreadyExists {
                continue
            }
        }
    }

    /// Removes a virtual camera, as if it were unplugged.
    ///
    /// - Throws: `DEVICE_NOT_FOUND`, or `INVALID_ARGUMENT` for a device that is not virtual.
    func remove(_ uniqueID: String) throws {
        guard let device = registry.device(uniqueID) else {
            throw RPCError(.deviceNotFound, "no device '\(uniqueID)'; 'camctl list' shows the devices")
        }
        guard device is VirtualCamera else {
            throw RPCError(.invalidArgument, "'\(uniqueID)' is not a virtual camera; only virtual cameras can be removed")
        }
        registry.remove(uniqueID)
    }
}
