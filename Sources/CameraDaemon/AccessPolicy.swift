import CameraIPC
import CameraProtocol
import Glibc

/// Who may do what. Today: admin calls (adding and removing virtual cameras) are
/// for the daemon's own user and root; everything else is for anyone who can
/// open the socket, which its file mode and group decide.
struct AccessPolicy: Sendable {
    /// The uid the daemon runs as.
    let daemonUID: UInt32

    init(daemonUID: UInt32 = getuid()) {
        self.daemonUID = daemonUID
    }

    func isAdmin(_ peer: PeerCredentials) -> Bool {
        peer.uid == daemonUID || peer.uid == 0
    }

    /// - Throws: `PERMISSION_DENIED` naming who may do `action`.
    func requireAdmin(_ peer: PeerCredentials, for action: String) throws {
        guard isAdmin(peer) else {
            throw CameraError(.permissionDenied,
                              "\(action) is allowed to camerad's own user (uid \(daemonUID)) and root, not uid \(peer.uid); run it as one of them")
        }
    }
}
