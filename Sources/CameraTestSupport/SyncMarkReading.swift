import CameraMedia

/// Reading ``SyncMarks`` back from what a player decodes of a file: a flash
/// frame, and where clicks start (the tests' side of the clapperboard).
extension SyncMarks {
    /// Whether a decoded frame (its luma) is a flash: the bars' rows, clear of
    /// the stamp bands, far brighter on average (208) than the bars are with
    /// the camera's controls at their defaults (98).
    public static func isFlash(luma: UnsafeRawBufferPointer, width: Int, height: Int, bytesPerRow: Int) -> Bool {
        let band = FrameStamp.Layout.bandHeight(frameHeight: height)
        let rows = band + 2..<height - band - 2
        guard !rows.isEmpty else { return false }
        var sum = 0
        for row in rows {
            for x in 0..<width { sum += Int(luma[row * bytesPerRow + x]) }
        }
        return sum / (rows.count * width) > 160
    }

    /// Where clicks start in `samples` (one channel, any rate): the first
    /// sample above half the click's level after a quiet stretch.
    public static func clickOnsets(_ samples: [Float], sampleRate: Int) -> [Int] {
        var onsets: [Int] = []
        let quiet = sampleRate / 10
        var lastLoud = -quiet
        for (index, sample) in samples.enumerated() where sample > clickLevel / 2 {
            if index - lastLoud >= quiet { onsets.append(index) }
            lastLoud = index
        }
        return onsets
    }
}
