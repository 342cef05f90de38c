import Foundation

// AVCapturePhoto.metadata: the photo's EXIF as ImageIO's property dictionary,
// read from the JPEG camerad made (its APP1 segment), so what the dictionary
// says is what the file says.

/// ImageIO's property keys (`kCGImageProperty…`), as seed code spells them:
/// `photo.metadata[kCGImagePropertyExifDictionary as String]`.
public let kCGImagePropertyOrientation = "Orientation"
public let kCGImagePropertyPixelWidth = "PixelWidth"
public let kCGImagePropertyPixelHeight = "PixelHeight"
public let kCGImagePropertyTIFFDictionary = "{TIFF}"
public let kCGImagePropertyTIFFMake = "Make"
public let kCGImagePropertyTIFFModel = "Model"
public let kCGImagePropertyTIFFSoftware = "Software"
public let kCGImagePropertyTIFFOrientation = "Orientation"
public let kCGImagePropertyTIFFDateTime = "DateTime"
public let kCGImagePropertyExifDictionary = "{Exif}"
public let kCGImagePropertyExifDateTimeOriginal = "DateTimeOriginal"
public let kCGImagePropertyExifSubsecTimeOriginal = "SubsecTimeOriginal"
public let kCGImagePropertyExifExposureTime = "ExposureTime"
public let kCGImagePropertyExifISOSpeedRatings = "ISOSpeedRatings"
public let kCGImagePropertyExifFlash = "Flash"
public let kCGImagePropertyExifPixelXDimension = "PixelXDimension"
public let kCGImagePropertyExifPixelYDimension = "PixelYDimension"

extension CapturePhoto {
    /// The photo's EXIF in ImageIO's shape, as Apple's `metadata`: top-level
    /// `Orientation`, `PixelWidth`, `PixelHeight`; `{TIFF}` (make, model,
    /// software, orientation, date); `{Exif}` (date and subseconds taken,
    /// exposure time in seconds, ISO as an array, flash, pixel dimensions).
    /// Empty for an uncompressed photo, which carries no EXIF.
    public var metadata: [String: Any] {
        guard fileDataRepresentation() != nil, let exif = EXIFReader(jpeg: data) else { return [:] }
        var tiff: [String: Any] = [:]
        var exifDictionary: [String: Any] = [:]
        for (tag, value) in exif.entries(in: .zero) {
            switch tag {
            case 0x010F: tiff[kCGImagePropertyTIFFMake] = value
            case 0x0110: tiff[kCGImagePropertyTIFFModel] = value
            case 0x0131: tiff[kCGImagePropertyTIFFSoftware] = value
            case 0x0112: tiff[kCGImagePropertyTIFFOrientation] = value
            case 0x0132: tiff[kCGImagePropertyTIFFDateTime] = value
            default: break
            }
        }
        for (tag, value) in exif.entries(in: .exif) {
            switch tag {
            case 0x9003: exifDictionary[kCGImagePropertyExifDateTimeOriginal] = value
            case 0x9291: exifDictionary[kCGImagePropertyExifSubsecTimeOriginal] = value
            case 0x829A: exifDictionary[kCGImagePropertyExifExposureTime] = value
            case 0x8827: exifDictionary[kCGImagePropertyExifISOSpeedRatings] = [value]
            case 0x9209: exifDictionary[kCGImagePropertyExifFlash] = value
            case 0xA002: exifDictionary[kCGImagePropertyExifPixelXDimension] = value
            case 0xA003: exifDictionary[kCGImagePropertyExifPixelYDimension] = value
            default: break
            }
        }
        var metadata: [String: Any] = [
            kCGImagePropertyPixelWidth: Int(dimensions.width), kCGImagePropertyPixelHeight: Int(dimensions.height),
        ]
        if let orientation = tiff[kCGImagePropertyTIFFOrientation] { metadata[kCGImagePropertyOrientation] = orientation }
        if !tiff.isEmpty { metadata[kCGImagePropertyTIFFDictionary] = tiff }
        if !exifDictionary.isEmpty { metadata[kCGImagePropertyExifDictionary] = exifDictionary }
        return metadata
    }
}

/// A JPEG's EXIF block (APP1 "Exif\0\0", a TIFF structure in either byte
/// order) read as its entries: text, integers and rationals as Doubles.
struct EXIFReader {
    enum Directory { case zero, exif }

    private let tiff: [UInt8]
    private let bigEndian: Bool

    /// Nil when the JPEG has no EXIF block or it is malformed.
    init?(jpeg: Data) {
        let bytes = [UInt8](jpeg)
        guard bytes.count > 4, bytes[0] == 0xFF, bytes[1] == 0xD8 else { return nil }
        var offset = 2
        // The markers before the image data, each with its length.
        while offset + 4 <= bytes.count, bytes[offset] == 0xFF, bytes[offset + 1] != 0xDA {
            let length = Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
            let body = offset + 4
            guard length >= 2, body + length - 2 <= bytes.count else { return nil }
            if bytes[offset + 1] == 0xE1, length >= 8, Array(bytes[body..<body + 6]) == Array("Exif\0\0".utf8) {
                tiff = Array(bytes[body + 6..<body + length - 2])
                guard tiff.count >= 8, tiff[0] == tiff[1], tiff[0] == 0x49 || tiff[0] == 0x4D else { return nil }
                bigEndian = tiff[0] == 0x4D
                return
            }
            offset = body + length - 2
        }
        return nil
    }

    /// A directory's entries: tag → value (String, Int, or Double for a rational).
    func entries(in directory: Directory) -> [(tag: UInt16, value: Any)] {
        guard let zero = integer(at: 4, size: 4) else { return [] }
        var start = zero
        if directory == .exif {
            guard let pointer = rawEntries(at: zero).first(where: { $0.tag == 0x8769 }),
                  let exif = integer(at: pointer.field + 8, size: 4) else { return [] }
            start = exif
        }
        return rawEntries(at: start).compactMap { entry in value(of: entry).map { (entry.tag, $0) } }
    }

    private func rawEntries(at directory: Int) -> [(tag: UInt16, field: Int)] {
        guard let count = integer(at: directory, size: 2) else { return [] }
        return (0..<count).compactMap { index in
            let field = directory + 2 + 12 * index
            return integer(at: field, size: 2).map { (UInt16($0), field) }
        }
    }

    private func value(of entry: (tag: UInt16, field: Int)) -> Any? {
        guard let type = integer(at: entry.field + 2, size: 2), let count = integer(at: entry.field + 4, size: 4) else { return nil }
        let size = [1: 1, 2: 1, 3: 2, 4: 4, 5: 8, 7: 1, 9: 4, 10: 8][type] ?? 0
        guard size > 0, count > 0 else { return nil }
        // Four bytes or fewer sit in the entry itself, else at the offset it holds.
        let at = size * count <= 4 ? entry.field + 8 : integer(at: entry.field + 8, size: 4) ?? -1
        guard at >= 0, at + size * count <= tiff.count else { return nil }
        switch type {
        case 2: return String(decoding: tiff[at..<at + count].prefix { $0 != 0 }, as: UTF8.self)
        case 3, 4: return integer(at: at, size: size)
        case 5:
            guard let numerator = integer(at: at, size: 4), let denominator = integer(at: at + 4, size: 4), denominator != 0
            else { return nil }
            return Double(numerator) / Double(denominator)
        default: return nil
        }
    }

    private func integer(at offset: Int, size: Int) -> Int? {
        guard offset >= 0, offset + size <= tiff.count else { return nil }
        let bytes = tiff[offset..<offset + size]
        return (bigEndian ? Array(bytes) : bytes.reversed()).reduce(0) { $0 << 8 | Int($1) }
    }
}
