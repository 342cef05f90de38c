import CameraIPC
import CameraMedia
import Logging

/// A microphone's levels, computed once per microphone whatever the number of
/// listeners (issue 34's `CaptureConnection.audioChannels`): a derived node
/// that reads the microphone's periods (``AudioLevels``) and every
/// ``interval`` publishes a record — per channel, the average power and the
/// peak hold in dBFS, as two little-endian Float32s — that meters subscribe
/// to like any node's buffers. ``latest`` is the last reading, for one-off
/// questions (`camctl levels --json`).
final class AudioMeter: Sendable {
    /// Seconds between two readings.
    let interval: Double
    private let derived: DerivedNode
    private let work: Work
    var node: MediaNode { derived.node }

    /// Makes the meter and subscribes it to `source` (charged to camerad).
    ///
    /// - Throws: RESOURCE_EXHAUSTED when its pool, worker or subscription cannot be had.
    init(of source: MediaNode, layout: AudioLayout, interval: Double = 0.1, budget: ClientBudget, logger: Logger) throws(CameraError) {
        self.interval = interval
        let work = Work(layout: layout, interval: interval)
        self.work = work
        let node = try MediaNode(name: "\(source.name)'s levels", media: .records(maxBytes: layout.channels * 8), slots: 8,
                                 budget: budget, logger: logger)
        derived = try DerivedNode(node, reading: source, passesDropsOn: false) { period, node in work.take(period, into: node) }
    }

    /// The last reading, per channel; nil before the first.
    var latest: [AudioLevels.Reading]? { work.latest.withLock { $0 } }

    /// Stops reading the microphone and ends the meter's subscribers.
    func stop() { derived.stop() }

    /// A record as published: per channel, average power then peak hold.
    static func readings(in record: UnsafeRawBufferPointer) -> [AudioLevels.Reading] {
        stride(from: 0, to: record.count - 7, by: 8).map {
            AudioLevels.Reading(averagePowerLevel: record.load(fromByteOffset: $0, as: Float.self),
                                peakHoldLevel: record.load(fromByteOffset: $0 + 4, as: Float.self))
        }
    }

    /// The meter's work on its input's worker (its locks never contended:
    /// one period after another, and ``AudioMeter/latest`` read now and then).
    private final class Work: Sendable {
        private struct Meter {
            var levels: AudioLevels
            var framesSinceReading = 0
            var readingsMade: UInt64 = 0
        }

        let latest = OrderedMutex<[AudioLevels.Reading]?>(.audioWork, nil)
        private let meter: OrderedMutex<Meter>
        private let layout: AudioLayout
        private let interval: Double
        private let framesPerReading: Int

        init(layout: AudioLayout, interval: Double) {
            self.layout = layout
            self.interval = interval
            framesPerReading = max(1, Int((interval * Double(layout.sampleRate)).rounded()))
            meter = OrderedMutex(.audioWork, Meter(levels: AudioLevels(channels: layout.channels, sampleRate: layout.sampleRate)))
        }

        /// Adds a period; publishes a reading when one is due (with no lock held).
        func take(_ period: PooledFrame, into node: MediaNode) {
            let reading = meter.withLock { meter -> (sequence: UInt64, levels: [AudioLevels.Reading])? in
                meter.levels.add(period.bytes, format: layout.sampleFormat)
                meter.framesSinceReading += layout.framesPerPeriod
                guard meter.framesSinceReading >= framesPerReading else { return nil }
                meter.framesSinceReading -= framesPerReading
                defer { meter.readingsMade += 1 }
                return (meter.readingsMade, meter.levels.readings)
            }
            guard let reading else { return }
            latest.withLock { $0 = reading.levels }
            node.publish(sequence: reading.sequence, timestampNanoseconds: period.timestampNanoseconds + period.durationNanoseconds,
                         durationNanoseconds: Int64(interval * 1e9)) { slot in
                for (channel, levels) in reading.levels.enumerated() {
                    slot.storeBytes(of: levels.averagePowerLevel, toByteOffset: channel * 8, as: Float.self)
                    slot.storeBytes(of: levels.peakHoldLevel, toByteOffset: channel * 8 + 4, as: Float.self)
                }
                return reading.levels.count * 8
            }
        }
    }
}
