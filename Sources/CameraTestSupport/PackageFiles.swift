import Foundation

/// The package's own files, for tests that hold the code and its documents
/// to each other (source scans, ARCHITECTURE.md's lists).
public enum PackageFiles {
    /// The package's root folder.
    public static let root = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// One Swift source file of a target.
    public struct Source: Sendable {
        public let target: String
        public let file: URL
        public let text: String

        public var name: String { file.lastPathComponent }

        /// Its lines with their numbers (from 1), those that are only a comment left out.
        public var codeLines: [(number: Int, code: String)] {
            text.split(separator: "\n", omittingEmptySubsequences: false).enumerated().compactMap { index, line in
                let code = line.trimmingCharacters(in: .whitespaces)
                return code.hasPrefix("//") ? nil : (index + 1, code)
            }
        }
    }

    /// The Swift sources of `targets` (folders under Sources/).
    public static func swiftSources(of targets: [String]) throws -> [Source] {
        try targets.flatMap { target -> [Source] in
            let enumerator = FileManager.default.enumerator(at: root.appending(path: "Sources/\(target)"), includingPropertiesForKeys: nil)!
            return try enumerator.compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" }.map { file in
                Source(target: target, file: file, text: try String(contentsOf: file, encoding: .utf8))
            }
        }
    }
}
