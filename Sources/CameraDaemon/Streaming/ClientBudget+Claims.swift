import CameraIPC

/// What camerad makes for clients that costs a thread and CPU or memory of
/// its own — an encoder, a resampler, a recording, a check of a client's file
/// — counted per connection, per user (uid) and in all, as descriptors and
/// pools' memory are (``ClientBudget``). Each has a limit of each kind, refused
/// with RESOURCE_EXHAUSTED naming it and what to do, so that no client — and
/// no user — can raise camerad's threads, memory or descriptors past its
/// share with any feature, and camerad's threads are bounded in all (the sum
/// of the limits in all, with the devices' own).
///
/// Shared things are counted once per key: a connection with three
/// recordings at one camera's same settings uses one encoder; a user's
/// connections listening to one resampled layout use one variant. So a
/// client pays for each distinct thing it makes camerad keep, whoever made
/// it first, and however many of its streams share it.
extension ClientBudget {
    enum Resource: String, CaseIterable, Sendable {
        /// A camera's encoder (H.264, or its own MJPEG passed on), one per camera and settings.
        case videoEncoder = "video encoders"
        /// A microphone's AAC encoder, one per microphone and settings.
        case audioEncoder = "audio encoders"
        /// A microphone's variant in another layout (a resampler) or its meter: a worker thread each.
        case audioNode = "audio variants and meters"
        /// A movie being recorded: its recorder's worker thread.
        case recording = "recordings"
        /// A movie's file being checked (fstat, fstatvfs) on a thread of its own;
        /// counted until that thread is let go, however long its file takes to answer.
        case fileCheck = "movie-file checks under way"

        /// What the refusal says to do.
        var advice: String {
            switch self {
            case .videoEncoder: "record at settings already in use (the same size, rate, bit rate and keyframe interval), or stop a recording"
            case .audioEncoder: "stop a recording with sound"
            case .audioNode: "listen in a layout already in use (the microphone's own costs nothing), or close a stream"
            case .recording: "stop a recording"
            case .fileCheck: "record to a local file; checks of files whose server does not answer stay counted until it does"
            }
        }
    }

    /// The most of one resource a connection, a user and all clients together may have.
    struct Share: Sendable, Equatable {
        var perConnection: Int
        var perUser: Int
        var inAll: Int
    }

    /// The limits, as `Protos/README.md`'s table of bounds gives them.
    static let defaultShares: [Resource: Share] = [
        .videoEncoder: Share(perConnection: 4, perUser: 8, inAll: 32),
        .audioEncoder: Share(perConnection: 4, perUser: 8, inAll: 32),
        .audioNode: Share(perConnection: 8, perUser: 16, inAll: 64),
        .recording: Share(perConnection: 8, perUser: 32, inAll: 128),
        // A burst of starts checks its files at once: 8 a connection.
        .fileCheck: Share(perConnection: 8, perUser: 16, inAll: 64),
    ]

    /// One use of a resource, given back when the last reference goes — as
    /// an ``OwnedFD`` is closed — so that no path that forgets it can leak
    /// the count.
    final class Claim: Sendable {
        let resource: Resource
        let key: String
        let owner: Owner
        private let budget: ClientBudget

        fileprivate init(_ resource: Resource, _ key: String, _ owner: Owner, _ budget: ClientBudget) {
            self.resource = resource
            self.key = key
            self.owner = owner
            self.budget = budget
        }

        deinit { budget.giveBack(resource, key, owner) }
    }

    /// Uses of each key of one resource.
    struct Uses: Sendable {
        var connections: [UInt64: [String: Int]] = [:]
        var users: [UInt32: [String: Int]] = [:]
        var all: [String: Int] = [:]
    }

    /// Charges `owner` a use of `resource`'s `key` (a distinct encoder, a
    /// variant; a unique one for what is not shared), until the claim goes.
    /// camerad's own uses (``Owner/daemon``) count in all only.
    ///
    /// - Throws: RESOURCE_EXHAUSTED when the key is new to the connection, the
    ///   user or camerad and would take it past its limit.
    func claim(_ resource: Resource, _ key: String, for owner: Owner) throws(CameraError) -> Claim {
        let share = limits.shares[resource] ?? Self.defaultShares[resource]!
        try withUses(resource) { uses throws(CameraError) in
            if case .client(let connection, let user) = owner {
                let own = uses.connections[connection] ?? [:]
                guard own[key] != nil || own.count < share.perConnection else {
                    throw CameraError(.resourceExhausted, "this connection uses \(own.count) \(resource.rawValue), the most one may "
                        + "(\(share.perConnection)); \(resource.advice)")
                }
                let users = uses.users[user] ?? [:]
                guard users[key] != nil || users.count < share.perUser else {
                    throw CameraError(.resourceExhausted, "uid \(user)'s clients use \(users.count) \(resource.rawValue), the most one user "
                        + "may (\(share.perUser)); \(resource.advice)")
                }
            }
            guard uses.all[key] != nil || uses.all.count < share.inAll else {
                throw CameraError(.resourceExhausted, "camerad runs \(uses.all.count) \(resource.rawValue) for its clients, the most it "
                    + "may (\(share.inAll)); try again when others end")
            }
            if case .client(let connection, let user) = owner {
                uses.connections[connection, default: [:]][key, default: 0] += 1
                uses.users[user, default: [:]][key, default: 0] += 1
            }
            uses.all[key, default: 0] += 1
        }
        return Claim(resource, key, owner, self)
    }

    fileprivate func giveBack(_ resource: Resource, _ key: String, _ owner: Owner) {
        withUses(resource) { uses in
            func drop<Scope>(_ scope: Scope, _ table: inout [Scope: [String: Int]]) {
                table[scope]?[key]? -= 1
                if table[scope]?[key] == 0 { table[scope]?[key] = nil }
                if table[scope]?.isEmpty == true { table[scope] = nil }
            }
            if case .client(let connection, let user) = owner {
                drop(connection, &uses.connections)
                drop(user, &uses.users)
            }
            uses.all[key]? -= 1
            if uses.all[key] == 0 { uses.all[key] = nil }
        }
    }

    /// Distinct keys of `resource` in use: by `owner`'s connection, or in all.
    func inUse(_ resource: Resource, by owner: Owner? = nil) -> Int {
        withUses(resource) { uses in
            switch owner {
            case .client(let connection, _): uses.connections[connection]?.count ?? 0
            case .daemon, nil: uses.all.count
            }
        }
    }
}
