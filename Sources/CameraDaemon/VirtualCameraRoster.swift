import CameraMedia

/// Adds and removes the daemon's virtual cameras and microphones, keeping their indices unique.
struct VirtualCameraRoster: Sendable {
    /// Indices run from 0 to 63.
    static let maxCount = 64

    let registry: DeviceRegistry

    /// Adds `virtual-<index>`, at the lowest free index when none is given.
    ///
    /// - Throws: `ALREADY_EXISTS` for a taken index, `INVALID_ARGUMENT` for one out
    ///   of range, `RESOURCE_EXHAUSTED` when all are taken.
    @discardableResult
    func add(
        index: Int? = nil, localizedName: String = "", position: DeviceDescription.Position = .unspecified,
        options: VirtualCamera.Options = VirtualCamera.Options()
    ) throws -> VirtualCamera {
        if let index {
            guard (0..<Self.maxCount).contains(index) else {
                throw CameraError(.invalidArgument, "virtual camera index \(index) is out of range; use 0 to \(Self.maxCount - 1)")
            }
            let camera = VirtualCamera(index: index, localizedName: localizedName, position: position, options: options)
            try registry.add(camera)
            return camera
        }
        // Another add may take the index we picked; then pick again.
        while true {
            let taken = Set(registry.devices.compactMap { ($0 as? VirtualCamera)?.index })
            guard let free = (0..<Self.maxCount).first(where: { !taken.contains($0) }) else {
                throw CameraError(.resourceExhausted, "all \(Self.maxCount) virtual cameras exist; remove one first")
            }
            let camera = VirtualCamera(index: free, localizedName: localizedName, position: position, options: options)
            do {
                try registry.add(camera)
                return camera
            } catch let error as CameraError where error.code == .alreadyExists {
                continue
            }
        }
    }

    /// Adds `virtual-microphone-<index>`, at the lowest free index when none is given.
    ///
    /// - Throws: as ``add(index:localizedName:position:options:)``.
    @discardableResult
    func addMicrophone(index: Int? = nil, localizedName: String = "", signal: VirtualMicrophone.Signal = .stamp,
                       driftPPM: Int = 0) throws -> VirtualMicrophone {
        if let index {
            guard (0..<Self.maxCount).contains(index) else {
                throw CameraError(.invalidArgument, "virtual microphone index \(index) is out of range; use 0 to \(Self.maxCount - 1)")
            }
            let microphone = VirtualMicrophone(index: index, localizedName: localizedName, signal: signal, driftPPM: driftPPM)
            try registry.add(microphone: microphone)
            return microphone
        }
        while true {
            let taken = Set(registry.microphones.compactMap { ($0.microphone as? VirtualMicrophone)?.index })
            guard let free = (0..<Self.maxCount).first(where: { !taken.contains($0) }) else {
                throw CameraError(.resourceExhausted, "all \(Self.maxCount) virtual microphones exist; remove one first")
            }
            let microphone = VirtualMicrophone(index: free, localizedName: localizedName, signal: signal, driftPPM: driftPPM)
            do {
                try registry.add(microphone: microphone)
                return microphone
            } catch let error as CameraError where error.code == .alreadyExists {
                continue
            }
        }
    }

    /// Removes a virtual camera or microphone, as if it were unplugged.
    ///
    /// - Throws: `DEVICE_NOT_FOUND`, or `INVALID_ARGUMENT` for a device that is not virtual.
    func remove(_ uniqueID: String) throws {
        let isVirtual: Bool
        if let device = registry.device(uniqueID) {
            isVirtual = device is VirtualCamera
        } else if let microphone = registry.microphone(uniqueID) {
            isVirtual = microphone.microphone is VirtualMicrophone
        } else {
            throw CameraError.noDevice(uniqueID)
        }
        guard isVirtual else {
            throw CameraError(.invalidArgument, "'\(uniqueID.echoed)' is not virtual; only virtual devices can be removed")
        }
        registry.remove(uniqueID)
    }
}

extension VirtualCamera.Options {
    /// The options AddVirtualCamera asks for: a pixel format and size (nil or 0:
    /// the standard one's), a frame duration (nil: 30 fps, or the nearest the
    /// format allows).
    ///
    /// - Throws: `UNSUPPORTED_FORMAT` for a mode virtual cameras do not have,
    ///   `INVALID_ARGUMENT` for a frame duration outside its format's range.
    init(unthrottled: Bool, staticPicture: Bool, pixelFormat: PixelFormat?, width: UInt32, height: UInt32,
         frameDuration: FrameDuration?) throws {
        self.init()
        self.unthrottled = unthrottled
        self.staticPicture = staticPicture
        var formats = VirtualCamera.standardFormats
        if pixelFormat != nil || width != 0 || height != 0 {
            let pixelFormat = pixelFormat ?? formats[formatIndex].pixelFormat
            let size = VirtualCamera.Size(width == 0 ? formats[formatIndex].width : width,
                                          height == 0 ? formats[formatIndex].height : height)
            guard VirtualCamera.pixelFormats.contains(pixelFormat) else {
                throw CameraError(.unsupportedFormat, "virtual cameras make YUYV, NV12 or MJPG, not \(pixelFormat.code)")
            }
            if !VirtualCamera.sizes.contains(size) {
                guard VirtualCamera.allows(size) else {
                    throw CameraError(.unsupportedFormat,
                                      "a virtual camera's size is even, 64x64 to 4096x2160 (such as 3840x2160), not \(size)")
                }
                extraSize = size
                formats = VirtualCamera.formats(adding: size)
            }
            formatIndex = formats.firstIndex { $0.matches(pixelFormat, size.width, size.height) }!
        }
        let format = formats[formatIndex]
        if let asked = frameDuration {
            guard asked.isValid, format.allows(asked) else {
                let fastest = format.frameRateRanges[0].minFrameDuration.denominator
                throw CameraError(.invalidArgument,
                                  "frame duration \(asked) s is outside 1/\(fastest) to 1 s for \(format.width)x\(format.height)")
            }
            self.frameDuration = asked
        } else {
            self.frameDuration = ModeSelection.frameDuration(for: format, preferring: VirtualCamera.defaultFrameDuration)
        }
    }
}
