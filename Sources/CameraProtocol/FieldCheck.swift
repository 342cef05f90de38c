import SwiftProtobuf

/// A message whose every number camerad checks as it is decoded, before any
/// handler sees it (``RPCRouter``, Hello): a value past its field's range is
/// INVALID_ARGUMENT naming the field and the range, so no conversion or
/// multiplication behind the edge can trap on what a client sent. The ranges
/// themselves are in `RequestRanges.swift`, one table for every request.
public protocol CheckedMessage: SwiftProtobuf.Message {
    /// One check per field that carries a number (integers, reals, enums) or
    /// a message that does.
    static var fieldChecks: [FieldCheck<Self>] { get }

    /// Each field's name and what it may hold (the checks without their work).
    static var fieldBounds: [(name: String, bounds: FieldBounds, meaning: String)] { get }
}

extension CheckedMessage {
    /// Checks every field against its range.
    ///
    /// - Parameter path: the field this message is in, for the error ("start.video").
    /// - Throws: INVALID_ARGUMENT naming the first field out of its range and the range.
    public func checkFields(path: String = "") throws(RPCError) {
        for check in Self.fieldChecks { try check.check(self, path) }
    }

    public static var fieldBounds: [(name: String, bounds: FieldBounds, meaning: String)] {
        fieldChecks.map { ($0.name, $0.bounds, $0.meaning) }
    }
}

/// What a field may hold.
public enum FieldBounds {
    /// An integer in this range (every field's default, 0, among them).
    case integer(ClosedRange<Int128>)
    /// A finite number in this range: never NaN or infinite.
    case real(ClosedRange<Double>)
    /// One of these values of the enum.
    case enumeration([Int])
    /// A message whose fields have checks of their own.
    case message(any CheckedMessage.Type)
}

/// What one field of `Message` may hold, and the check of it.
public struct FieldCheck<Message> {
    /// The field's name in the .proto file.
    public let name: String
    public let bounds: FieldBounds
    /// What the range means ("pixels; 0 for the camera's"), as errors and `Protos/README.md` say it.
    public var meaning = ""
    let check: (Message, _ path: String) throws(RPCError) -> Void

    // MARK: - Integers

    /// An integer field in `range`; `meaning` says what the range is, for the error.
    public static func integer<N: BinaryInteger>(_ name: String, _ value: @escaping (Message) -> N, _ range: ClosedRange<Int128>,
                                                 _ meaning: String = "") -> Self {
        FieldCheck(name: name, bounds: .integer(range), meaning: meaning) { message, path throws(RPCError) in
            try Self.checkInteger(Int128(value(message)), range, path + name, meaning)
        }
    }

    /// A repeated integer field, each element in `range`.
    public static func integers<N: BinaryInteger>(_ name: String, _ values: @escaping (Message) -> [N], _ range: ClosedRange<Int128>,
                                                  _ meaning: String = "") -> Self {
        FieldCheck(name: name, bounds: .integer(range), meaning: meaning) { message, path throws(RPCError) in
            for value in values(message) { try Self.checkInteger(Int128(value), range, path + name, meaning) }
        }
    }

    /// An integer field that may hold anything its type can: named here so the
    /// table is whole, and so that whoever reads it knows the value is taken as it comes.
    public static func anyInteger<N: FixedWidthInteger>(_ name: String, _ value: @escaping (Message) -> N) -> Self {
        FieldCheck(name: name, bounds: .integer(Int128(N.min)...Int128(N.max))) { _, _ in }
    }

    /// ``anyInteger(_:_:)`` for a repeated field.
    public static func anyIntegers<N: FixedWidthInteger>(_ name: String, _ values: @escaping (Message) -> [N]) -> Self {
        FieldCheck(name: name, bounds: .integer(Int128(N.min)...Int128(N.max))) { _, _ in }
    }

    private static func checkInteger(_ value: Int128, _ range: ClosedRange<Int128>, _ field: String, _ meaning: String) throws(RPCError) {
        guard !range.contains(value) else { return }
        throw RPCError(.invalidArgument, "\(field) \(value) is out of range; use \(range.lowerBound) to \(range.upperBound)"
            + (meaning.isEmpty ? "" : " (\(meaning))"))
    }

    // MARK: - Reals

    /// A float or double field: finite, in `range`.
    public static func real<F: BinaryFloatingPoint>(_ name: String, _ value: @escaping (Message) -> F, _ range: ClosedRange<Double>,
                                                    _ meaning: String = "") -> Self {
        FieldCheck(name: name, bounds: .real(range), meaning: meaning) { message, path throws(RPCError) in
            let number = Double(value(message))
            if number.isFinite, range.contains(number) { return }
            throw RPCError(.invalidArgument, "\(path + name) \(number) is out of range; use a number from \(range.lowerBound) to \(range.upperBound)"
                + (meaning.isEmpty ? "" : " (\(meaning))"))
        }
    }

    // MARK: - Enums

    /// An enum field: a value this camerad knows.
    public static func enumeration<E: SwiftProtobuf.Enum & CaseIterable>(_ name: String, _ value: @escaping (Message) -> E) -> Self {
        FieldCheck(name: name, bounds: .enumeration(E.allCases.map(\.rawValue))) { message, path throws(RPCError) in
            try Self.checkEnum(value(message), path + name)
        }
    }

    /// A repeated enum field: each value one this camerad knows.
    public static func enumerations<E: SwiftProtobuf.Enum & CaseIterable>(_ name: String, _ values: @escaping (Message) -> [E]) -> Self {
        FieldCheck(name: name, bounds: .enumeration(E.allCases.map(\.rawValue))) { message, path throws(RPCError) in
            for value in values(message) { try Self.checkEnum(value, path + name) }
        }
    }

    private static func checkEnum<E: SwiftProtobuf.Enum & CaseIterable>(_ value: E, _ field: String) throws(RPCError) {
        guard !E.allCases.contains(value) else { return }
        let known = E.allCases.map { "\($0.rawValue) (\($0))" }
        let listed = known.count < 2 ? known.joined() : known.dropLast().joined(separator: ", ") + " or " + known.last!
        throw RPCError(.invalidArgument, "\(field) \(value.rawValue) is unknown to this camerad; use \(listed)")
    }

    // MARK: - Messages

    /// A message field, checked by its own checks.
    public static func message<M: CheckedMessage>(_ name: String, _ value: @escaping (Message) -> M) -> Self {
        FieldCheck(name: name, bounds: .message(M.self)) { message, path throws(RPCError) in
            try value(message).checkFields(path: path + name + ".")
        }
    }

    /// A repeated message field, each checked by its own checks.
    public static func messages<M: CheckedMessage>(_ name: String, _ values: @escaping (Message) -> [M]) -> Self {
        FieldCheck(name: name, bounds: .message(M.self)) { message, path throws(RPCError) in
            for (index, element) in values(message).enumerated() { try element.checkFields(path: "\(path)\(name)[\(index)].") }
        }
    }
}
