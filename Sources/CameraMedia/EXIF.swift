internal import CExif
import Foundation

/// What a photo's EXIF block says.
public struct PhotoMetadata: Sendable, Equatable {
    /// Make: the driver's name, or "camerad" for a virtual camera.
    public var make: String
    /// Model: the device's name.
    public var model: String
    /// Software: "camerad 0.1.0".
    public var software: String
    /// DateTimeOriginal (local time) with SubSecTimeOriginal.
    public var captured: Date
    /// The EXIF orientation, 1 to 8 (1: as stored).
    public var orientation: Int
    public var pixelWidth: Int
    public var pixelHeight: Int
    /// ExposureTime in seconds, as numerator and denominator, when the device reports it.
    public var exposureTime: (numerator: UInt32, denominator: UInt32)?
    /// ISOSpeedRatings, when the device reports it.
    public var iso: Int?
    public var flashFired: Bool

    public init(make: String, model: String, software: String, captured: Date, orientation: Int = 1,
                pixelWidth: Int, pixelHeight: Int, exposureTime: (numerator: UInt32, denominator: UInt32)? = nil,
                iso: Int? = nil, flashFired: Bool = false) {
        self.make = make
        self.model = model
        self.software = software
        self.captured = captured
        self.orientation = orientation
        self.pixelWidth = pixelWidth
        self.pixelHeight = pixelHeight
        self.exposureTime = exposureTime
        self.iso = iso
        self.flashFired = flashFired
    }

    public static func == (lhs: PhotoMetadata, rhs: PhotoMetadata) -> Bool {
        lhs.make == rhs.make && lhs.model == rhs.model && lhs.software == rhs.software && lhs.captured == rhs.captured
            && lhs.orientation == rhs.orientation && lhs.pixelWidth == rhs.pixelWidth && lhs.pixelHeight == rhs.pixelHeight
            && lhs.exposureTime?.numerator == rhs.exposureTime?.numerator
            && lhs.exposureTime?.denominator == rhs.exposureTime?.denominator
            && lhs.iso == rhs.iso && lhs.flashFired == rhs.flashFired
    }
}

/// EXIF blocks through libexif: made for photos, read back for checks.
public enum EXIF {
    /// `jpeg` with an APP1 EXIF segment of `metadata` right after its SOI marker.
    ///
    /// - Throws: ``JPEGError`` when `jpeg` does not start with SOI or the block is too big.
    public static func insert(_ metadata: PhotoMetadata, into jpeg: [UInt8]) throws -> [UInt8] {
        guard jpeg.count >= 2, jpeg[0] == 0xFF, jpeg[1] == 0xD8 else { throw JPEGError(message: "not a JPEG (no SOI marker)") }
        let block = try block(metadata)
        let length = block.count + 2
        guard length <= 0xFFFF else { throw JPEGError(message: "EXIF block of \(block.count) bytes is too big") }
        return [0xFF, 0xD8, 0xFF, 0xE1, UInt8(length >> 8), UInt8(length & 0xFF)] + block + jpeg[2...]
    }

    /// The EXIF block ("Exif\0\0" and a little-endian TIFF structure).
    static func block(_ metadata: PhotoMetadata) throws -> [UInt8] {
        guard let data = exif_data_new() else { throw JPEGError(message: "exif_data_new failed") }
        defer { exif_data_unref(data) }
        exif_data_set_option(data, EXIF_DATA_OPTION_FOLLOW_SPECIFICATION)
        exif_data_set_data_type(data, EXIF_DATA_TYPE_COMPRESSED)
        exif_data_set_byte_order(data, EXIF_BYTE_ORDER_INTEL)
        exif_data_fix(data)
        let order = EXIF_BYTE_ORDER_INTEL

        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.dateFormat = "yyyy:MM:dd HH:mm:ss"
        let seconds = metadata.captured.timeIntervalSince1970
        let milliseconds = Int((seconds - seconds.rounded(.down)) * 1000)

        func content(_ ifd: ExifIfd) -> UnsafeMutablePointer<ExifContent> {
            switch ifd {
            case EXIF_IFD_0: data.pointee.ifd.0!
            default: data.pointee.ifd.2!
            }
        }
        /// The entry for `tag`, made if missing, holding `bytes` in `format`.
        func set(_ ifd: ExifIfd, _ tag: ExifTag, _ format: ExifFormat, components: Int, _ bytes: [UInt8]) {
            let place = content(ifd)
            var entry = exif_content_get_entry(place, tag)
            if entry == nil, let made = exif_entry_new() {
                exif_content_add_entry(place, made)
                exif_entry_unref(made)
                made.pointee.tag = tag
                entry = made
            }
            guard let entry else { return }
            free(entry.pointee.data)
            let memory = malloc(max(1, bytes.count))!.assumingMemoryBound(to: UInt8.self)
            memory.initialize(from: bytes, count: bytes.count)
            entry.pointee.data = memory
            entry.pointee.size = UInt32(bytes.count)
            entry.pointee.format = format
            entry.pointee.components = UInt(components)
        }
        func ascii(_ ifd: ExifIfd, _ tag: ExifTag, _ text: String) {
            let bytes = Array(text.utf8) + [0]
            set(ifd, tag, EXIF_FORMAT_ASCII, components: bytes.count, bytes)
        }
        func short(_ ifd: ExifIfd, _ tag: ExifTag, _ value: Int) {
            var bytes = [UInt8](repeating: 0, count: 2)
            exif_set_short(&bytes, order, ExifShort(clamping: value))
            set(ifd, tag, EXIF_FORMAT_SHORT, components: 1, bytes)
        }
        func long(_ ifd: ExifIfd, _ tag: ExifTag, _ value: Int) {
            var bytes = [UInt8](repeating: 0, count: 4)
            exif_set_long(&bytes, order, ExifLong(clamping: value))
            set(ifd, tag, EXIF_FORMAT_LONG, components: 1, bytes)
        }

        ascii(EXIF_IFD_0, EXIF_TAG_MAKE, metadata.make)
        ascii(EXIF_IFD_0, EXIF_TAG_MODEL, metadata.model)
        ascii(EXIF_IFD_0, EXIF_TAG_SOFTWARE, metadata.software)
        short(EXIF_IFD_0, EXIF_TAG_ORIENTATION, metadata.orientation)
        ascii(EXIF_IFD_0, EXIF_TAG_DATE_TIME, formatter.string(from: metadata.captured))
        ascii(EXIF_IFD_EXIF, EXIF_TAG_DATE_TIME_ORIGINAL, formatter.string(from: metadata.captured))
        ascii(EXIF_IFD_EXIF, EXIF_TAG_SUB_SEC_TIME_ORIGINAL, String(format: "%03d", milliseconds))
        long(EXIF_IFD_EXIF, EXIF_TAG_PIXEL_X_DIMENSION, metadata.pixelWidth)
        long(EXIF_IFD_EXIF, EXIF_TAG_PIXEL_Y_DIMENSION, metadata.pixelHeight)
        // Bit 0: fired. 0x10 with it clear: "did not fire, compulsory flash suppression"
        // is wrong for a camera without one; plain 0 says "did not fire".
        short(EXIF_IFD_EXIF, EXIF_TAG_FLASH, metadata.flashFired ? 1 : 0)
        if let time = metadata.exposureTime {
            var bytes = [UInt8](repeating: 0, count: 8)
            exif_set_rational(&bytes, order, ExifRational(numerator: time.numerator, denominator: time.denominator))
            set(EXIF_IFD_EXIF, EXIF_TAG_EXPOSURE_TIME, EXIF_FORMAT_RATIONAL, components: 1, bytes)
        }
        if let iso = metadata.iso { short(EXIF_IFD_EXIF, EXIF_TAG_ISO_SPEED_RATINGS, iso) }

        var buffer: UnsafeMutablePointer<UInt8>?
        var size: UInt32 = 0
        exif_data_save_data(data, &buffer, &size)
        guard let buffer, size > 0 else { throw JPEGError(message: "libexif could not save the EXIF block") }
        defer { free(buffer) }
        return Array(UnsafeBufferPointer(start: buffer, count: Int(size)))
    }

    /// Every EXIF tag of a JPEG as libexif's parser reads it: tag name
    /// ("Make", "DateTimeOriginal") → its value as text. Empty without EXIF.
    public static func values(in jpeg: [UInt8]) -> [String: String] {
        guard let data = jpeg.withUnsafeBufferPointer({ exif_data_new_from_data($0.baseAddress, UInt32($0.count)) }) else {
            return [:]
        }
        defer { exif_data_unref(data) }
        var values: [String: String] = [:]
        let contents = [data.pointee.ifd.0, data.pointee.ifd.1, data.pointee.ifd.2, data.pointee.ifd.3, data.pointee.ifd.4]
        for case let content? in contents {
            for index in 0..<Int(content.pointee.count) {
                guard let entry = content.pointee.entries[index] else { continue }
                var text = [CChar](repeating: 0, count: 1024)
                exif_entry_get_value(entry, &text, UInt32(text.count))
                guard let name = exif_tag_get_name(entry.pointee.tag) else { continue }
                values[String(cString: name)] = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            }
        }
        return values
    }
}
