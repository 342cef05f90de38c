import CameraProtocol

extension CaptureDevice {
    /// AVCaptureDevice.DiscoverySession: the devices of some types, for a media
    /// type, at a position. The daemon applies the filter.
    public final class DiscoverySession: Sendable {
        public let deviceTypes: [DeviceType]
        /// Nil matches every media type.
        public let mediaType: MediaType?
        /// `.unspecified` matches every position.
        public let position: Position

        public init(deviceTypes: [DeviceType], mediaType: MediaType?, position: Position) {
            self.deviceTypes = deviceTypes
            self.mediaType = mediaType
            self.position = position
        }

        /// The matching devices now, in the daemon's order.
        public var devices: [CaptureDevice] {
            get async throws(CaptureError) {
                let media: Camerad_V1_MediaType
                switch mediaType {
                case nil: media = .unspecified
                case .video?: media = .video
                case .audio?: media = .audio
                default: return []
                }
                let types = deviceTypes.compactMap(\.proto)
                guard !types.isEmpty else { return [] }
                var filter = Camerad_V1_DeviceFilter()
                filter.deviceTypes = types
                filter.mediaType = media
                filter.position = position.proto
                return try await CaptureDevice.list(filter)
            }
        }
    }
}
