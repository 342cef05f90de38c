import ArgumentParser
import CaptureKit
import Foundation
import Glibc

extension Camctl {
    struct Snapshot: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Take a still photo to a file: a JPEG with EXIF, or the frame uncompressed.",
            discussion: """
                Takes the frame from the running stream when the device streams, else opens the \
                device in its photo mode for the shot. The file is written whole under another \
                name, then renamed: it is never left half-written. An existing FILE is kept \
                unless --force is given.
                """
        )

        @OptionGroup var global: GlobalOptions

        @OptionGroup var deviceOption: DeviceOption

        @OptionGroup var target: DeviceSelection

        @Argument(help: ArgumentHelp("Where to write the photo.", valueName: "file"))
        var fileArgument: String?

        /// FILE, once ``validate()`` has it (the one word given, when only one is).
        var file: String { fileArgument ?? "" }

        @Option(help: ArgumentHelp("JPEG quality, 1 to 100.", valueName: "n"))
        var quality: Int = 90

        @Option(help: ArgumentHelp("The photo fits in this size, in the device's aspect ratio.", valueName: "WxH"))
        var size: String?

        @Option(help: ArgumentHelp("Flash: off, on, auto.", valueName: "mode"))
        var flash: ModeArgument<CaptureDevice.FlashMode> = ModeArgument(argument: "off")!

        @Option(help: "How the photo is turned.")
        var orientation: OrientationArgument = .landscapeRight

        @Option(help: "jpeg, or the frame uncompressed: bgra or nv12.")
        var format: PhotoSettings.Codec = .jpeg

        @Flag(help: "Replace FILE if it exists.")
        var force = false

        mutating func validate() throws {
            var (selection, file) = (target, fileArgument)
            try selection.takeFile(&file)
            (target, fileArgument) = (selection, file)
            guard (1...100).contains(quality) else { throw ValidationError("--quality must be 1 to 100, not \(quality)") }
            if let size, Self.dimensions(size) == nil { throw ValidationError("--size must be WxH, such as 1280x720, not '\(size)'") }
        }

        static func dimensions(_ text: String) -> CMVideoDimensions? {
            let parts = text.lowercased().split(separator: "x").compactMap { Int32($0) }
            guard parts.count == 2, parts.allSatisfy({ $0 > 0 }) else { return nil }
            return CMVideoDimensions(width: parts[0], height: parts[1])
        }

        func run() async throws {
            global.apply()
            if !force && FileManager.default.fileExists(atPath: file) {
                throw CommandFailure("\(file) exists; pass --force to replace it")
            }
            let camera = try await target.pictureCamera(deviceOption)
            let session = CaptureSession()
            let output = CapturePhotoOutput()
            session.addInput(try CaptureDeviceInput(device: camera))
            session.addOutput(output)
            output.connection(with: .video)?.videoOrientation = orientation.orientation
            let photo = try await output.capturePhoto(with: PhotoSettings(
                codec: format, jpegQuality: quality, flashMode: flash.mode, maxPhotoDimensions: size.flatMap(Self.dimensions)))
            try Self.writeAtomically(photo.data, to: file, replacing: force)
            Output.line("\(file): \(photo.data.count) bytes, \(photo.pixelFormat) \(photo.dimensions)")
            if let note = photo.note { Output.error("camctl: note: \(note)") }
        }

        /// Writes `data` to a temporary file beside `path`, then moves it there:
        /// with `replacing`, by rename; else by link, which fails if `path` exists.
        /// A failure leaves no partial file.
        static func writeAtomically(_ data: Data, to path: String, replacing: Bool) throws {
            let folder = (path as NSString).deletingLastPathComponent
            let temporary = (folder.isEmpty ? "." : folder) + "/.\((path as NSString).lastPathComponent).camctl-\(getpid())"
            let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
            guard descriptor >= 0 else {
                throw CommandFailure("cannot write in \(folder.isEmpty ? "." : folder): \(String(cString: strerror(errno))); check the folder")
            }
            var failure: String?
            data.withUnsafeBytes { bytes in
                var offset = 0
                while offset < bytes.count {
                    let written = write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                    if written < 0 {
                        if errno == EINTR { continue }
                        failure = String(cString: strerror(errno))
                        return
                    }
                    offset += written
                }
            }
            if failure == nil && fsync(descriptor) != 0 { failure = String(cString: strerror(errno)) }
            close(descriptor)
            if failure == nil {
                let moved = replacing ? rename(temporary, path) : link(temporary, path)
                if moved != 0 { failure = errno == EEXIST ? "it exists; pass --force to replace it" : String(cString: strerror(errno)) }
            }
            if !replacing || failure != nil { unlink(temporary) }
            if let failure { throw CommandFailure("cannot write \(path): \(failure)") }
        }
    }
}

extension PhotoSettings.Codec: ExpressibleByArgument {}
