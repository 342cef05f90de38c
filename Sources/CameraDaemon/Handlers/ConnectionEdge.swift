import CameraIPC
import CameraProtocol
import Glibc

/// The protocol edge of the daemon itself: its answer to Hello, and the
/// budget admitting connections (RPCServer's ConnectionAdmission).
extension CameraDaemon {
    @Sendable static func answerHello(_ request: Camerad_V1_HelloRequest, _ peer: PeerCredentials) throws -> Camerad_V1_HelloResponse {
        guard request.protocolVersion == CameraService.protocolVersion else {
            throw RPCError(.versionMismatch,
                           "client speaks protocol version \(request.protocolVersion), camerad \(cameradVersion) speaks \(CameraService.protocolVersion); update the older of the two (CaptureKit, libcamerad-client, the camerad Python package, or camerad)")
        }
        var response = Camerad_V1_HelloResponse()
        response.protocolVersion = CameraService.protocolVersion
        response.serverVersion = cameradVersion
        response.features = features
        response.serverPid = getpid()
        response.clientPid = peer.pid
        response.clientUid = peer.uid
        return response
    }
}

extension ClientBudget: ConnectionAdmission {
    /// Admits a connection while its user may hold its descriptors.
    func admit(_ connectionID: UInt64, _ peer: PeerCredentials) throws(RPCError) {
        do throws(CameraError) {
            try admit(connection: connectionID, user: peer.uid)
        } catch {
            throw error.rpcError
        }
    }

    func dismiss(_ connectionID: UInt64) { dismiss(connection: connectionID) }
}
