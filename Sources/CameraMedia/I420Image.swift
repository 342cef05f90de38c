internal import CYUV

/// An I420 image in memory this module owns or borrows: the working format
/// between decoding a source and encoding an output.
struct I420Image {
    var y: UnsafeMutablePointer<UInt8>
    var u: UnsafeMutablePointer<UInt8>
    var v: UnsafeMutablePointer<UInt8>
    var strideY: Int32
    var strideUV: Int32
    var width: Int32
    var height: Int32

    /// The planes of a tightly packed I420 frame at `base`.
    init(packedAt base: UnsafeMutableRawPointer, width: Int, height: Int) {
        let planes = PixelFormat.i420.planes(width: width, height: height)!
        let bytes = base.assumingMemoryBound(to: UInt8.self)
        y = bytes + planes[0].offset
        u = bytes + planes[1].offset
        v = bytes + planes[2].offset
        strideY = Int32(planes[0].bytesPerRow)
        strideUV = Int32(planes[1].bytesPerRow)
        self.width = Int32(width)
        self.height = Int32(height)
    }

    /// The middle 1/`zoom` of the image each way, as a view of the same memory
    /// (even offsets and sizes, so the chroma planes line up).
    func centre(zoomedBy zoom: Double) -> I420Image {
        guard zoom > 1 else { return self }
        let width = max(2, Int32(Double(self.width) / zoom) & ~1)
        let height = max(2, Int32(Double(self.height) / zoom) & ~1)
        let left = (self.width - width) / 2 & ~1
        let top = (self.height - height) / 2 & ~1
        var view = self
        view.y = y + Int(top * strideY + left)
        view.u = u + Int(top / 2 * strideUV + left / 2)
        view.v = v + Int(top / 2 * strideUV + left / 2)
        view.width = width
        view.height = height
        return view
    }
}

/// Scratch memory for one I420 image, reused from frame to frame.
final class I420Scratch {
    private var storage: UnsafeMutableRawBufferPointer?

    deinit { storage?.deallocate() }

    /// An image of this size in the scratch memory (its content is whatever was there).
    func image(width: Int, height: Int) -> I420Image {
        let needed = PixelFormat.i420.frameSize(width: width, height: height)!
        if (storage?.count ?? 0) < needed {
            storage?.deallocate()
            storage = .allocate(byteCount: needed, alignment: 64)
        }
        return I420Image(packedAt: storage!.baseAddress!, width: width, height: height)
    }
}
