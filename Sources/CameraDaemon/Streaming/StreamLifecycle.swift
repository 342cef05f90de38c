/// The lifecycle of one client stream on a device.
///
/// ```
///          started: the capture runs, StreamStarted sent
///  opening ─────────────────────────────────────────────► streaming
///     │                                                       │
///     │ closed: the capture could not start (the call         │ closed: the client ended it,
///     │ says why), or the client went first                   │ the device went, camerad stops
///     └─────────────────────────► closed ◄────────────────────┘
/// ```
///
/// Only a streaming stream hears of frames, drops and format changes: nothing
/// reaches a client before its StreamStarted (which carries the pool an opening
/// stream was moved to). A closed stream is forgotten by the streamer; closing
/// twice (the client and the device at once) is nothing. ``handle(_:)`` lists
/// every pair; one that cannot happen is a bug in the caller, reported as
/// ``Outcome/illegal(_:)``.
struct StreamLifecycle: Equatable, Sendable {
    enum State: Equatable, Sendable {
        case opening
        case streaming
        case closed
    }

    enum Event: Equatable, Sendable {
        /// The capture runs and StreamStarted went to the client.
        case started
        /// The stream ends, for whatever reason.
        case closed
    }

    enum Outcome: Equatable, Sendable {
        /// The state changed.
        case moved
        /// Nothing to do.
        case ignored
        /// A pair that cannot happen: the caller's bug, with why.
        case illegal(String)
    }

    private(set) var state = State.opening

    /// Whether frames, drops and format changes go to the stream now.
    var receivesFrames: Bool { state == .streaming }

    mutating func handle(_ event: Event) -> Outcome {
        switch (state, event) {
        case (.opening, .started):
            state = .streaming
            return .moved
        case (.streaming, .started):
            return .illegal("a stream that streams was started again: StreamStarted goes once")
        case (.closed, .started):
            return .illegal("a closed stream was started: the streamer forgets a stream when it closes")
        case (.opening, .closed), (.streaming, .closed):
            state = .closed
            return .moved
        case (.closed, .closed):
            return .ignored
        }
    }
}
