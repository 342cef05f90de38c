import CameraEncoding

/// An encoder node shared by the recordings that use it: made for the first,
/// stopped when the last lets go.
protocol SharedEncoder: Sendable {
    var node: MediaNode { get }
    func stop()
}

extension VideoEncoderNode: SharedEncoder {}
extension AudioEncoderNode: SharedEncoder {}

/// The encoders recordings share (issue 35's "one encoder, many recorders"):
/// one per device and settings, made by the first recording that asks
/// (others asking meanwhile wait for the same one), counted, and stopped when
/// its last recording lets go. An encoder whose device went (its node ended)
/// is replaced by the next recording that asks.
actor SharedEncoders<Key: Hashable & Sendable, Encoder: SharedEncoder> {
    private struct Entry {
        let id: UInt64
        let making: Task<Encoder, any Error>
        var users: Int
    }
    private var entries: [Key: Entry] = [:]
    private var nextID: UInt64 = 1

    /// One recording's use of an encoder, until it lets go.
    struct Use: Sendable {
        let key: Key
        let encoder: Encoder
        fileprivate let entryID: UInt64
    }

    /// The encoder for `key`, made with `make` when there is none (or the one
    /// there ended); the caller uses it until ``letGo(_:)``.
    func use(_ key: Key, make: @escaping @Sendable () async throws -> Encoder) async throws -> Use {
        let entryID: UInt64
        let making: Task<Encoder, any Error>
        if var entry = entries[key] {
            entry.users += 1
            entries[key] = entry
            (entryID, making) = (entry.id, entry.making)
        } else {
            // A task of its own, not the first caller's: every caller of the key awaits this one making, which
            // a caller's cancellation must not end for the others.
            (entryID, making) = (nextID, Task { try await make() })
            nextID += 1
            entries[key] = Entry(id: entryID, making: making, users: 1)
        }
        do {
            return Use(key: key, encoder: try await making.value, entryID: entryID)
        } catch {
            letGo(key, entryID)
            throw error
        }
    }

    /// One user less; the last stops the encoder.
    func letGo(_ use: Use) { letGo(use.key, use.entryID) }

    private func letGo(_ key: Key, _ entryID: UInt64) {
        guard var entry = entries[key], entry.id == entryID else { return }
        entry.users -= 1
        guard entry.users == 0 else {
            entries[key] = entry
            return
        }
        entries[key] = nil
        // Its making may still be under way: awaited by a task, not by the actor, which other keys' users need.
        Task { try? await entry.making.value.stop() }
    }

    /// Forgets `use`'s encoder, whose node ended (its device went), so that
    /// the next recording asking for its key gets a new one.
    func forget(_ use: Use) {
        guard let entry = entries[use.key], entry.id == use.entryID else { return }
        entries[use.key] = nil
        use.encoder.stop()
    }

    /// Recordings using `key`'s encoder now.
    func users(of key: Key) -> Int { entries[key]?.users ?? 0 }
}
