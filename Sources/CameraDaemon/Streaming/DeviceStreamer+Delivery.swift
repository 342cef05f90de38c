import CameraProtocol
import Foundation

/// One frame from the capture thread to every stream and photo that wants it.
extension DeviceStreamer {
    /// One frame from the device, on its capture thread. Frames of a capture
    /// that is not the current one (being stopped, or superseded) are ignored.
    func deliver(_ frame: CapturedFrame, generation: UInt64) {
        var work: [(pool: VariantPool, slot: Int, streams: [UInt64])] = []
        var photos: [PhotoTap] = []
        var photoMode: CaptureMode?
        var stopJobs: [CaptureLifecycle.Job] = []
        state.withLock { state in
            guard state.lifecycle.currentGeneration == generation, let mode = state.lifecycle.mode else { return }
            state.framesCaptured += 1
            if !state.photoTaps.isEmpty {
                // Only photos waiting for a frame count frames down.
                for index in state.photoTaps.indices where state.photoTaps[index].continuation != nil {
                    state.photoTaps[index].skip -= 1
                }
                photos = state.photoTaps.filter { $0.continuation != nil && $0.skip < 0 }
                state.photoTaps.removeAll { $0.continuation != nil && $0.skip < 0 }
                photoMode = mode
                if !photos.isEmpty { stopJobs = stopIfUnused(&state) }
            }
            if let last = state.lastSequence, frame.sequence > last + 1 {
                for id in state.streams.keys where state.streams[id]!.phase == .streaming {
                    state.streams[id]!.drops.add(.discontinuity, count: Int(frame.sequence - last - 1), sequence: frame.sequence - 1)
                }
            }
            state.lastSequence = frame.sequence
            for poolID in state.currentPool.values {
                // A pool made from another mode's frames waits for its rebuild.
                guard let pool = state.pools[poolID], pool.source == mode.layout else { continue }
                let wanting = pool.streamIDs.filter { id in
                    state.streams[id].map { $0.phase == .streaming && wants($0, frame) } ?? false
                }
                guard !wanting.isEmpty else { continue }
                guard let slot = pool.freeSlot() else {
                    for id in wanting {
                        state.streams[id]!.lastOffered = frame.timestampNanoseconds
                        state.streams[id]!.drops.add(.outOfBuffers, count: 1, sequence: frame.sequence)
                    }
                    continue
                }
                pool.writing = slot
                work.append((pool, slot, wanting.sorted()))
            }
        }
        if !photos.isEmpty, let photoMode {
            let taken = PhotoFrame(bytes: Array(frame.bytes), mode: photoMode, sequence: frame.sequence,
                                   timestampNanoseconds: frame.timestampNanoseconds)
            for photo in photos { photo.continuation?.resume(returning: taken) }
        }
        perform(stopJobs)
        guard !work.isEmpty else { return }

        // Convert with the lock free: releases and other streams go on meanwhile.
        let zoom = device.settingsState.digitalZoom
        var written: [Int?] = []
        for job in work {
            do {
                written.append(try job.pool.converter.convert(frame.bytes, into: job.pool.slot(job.slot), zoom: zoom))
            } catch {
                logger.error("\(device.uniqueID): converting to \(job.pool.variant) failed: \(error)")
                written.append(nil)
            }
        }

        state.withLock { state in
            for (job, bytes) in zip(work, written) {
                job.pool.writing = nil
                guard let bytes, state.pools[job.pool.id] === job.pool else {
                    // Lost to a failed conversion or a pool replaced meanwhile: still told.
                    for id in job.streams where state.streams[id] != nil {
                        state.streams[id]!.drops.add(.discontinuity, count: 1, sequence: frame.sequence)
                    }
                    continue
                }
                job.pool.conversions += 1
                job.pool.bytesUsed[job.slot] = bytes
                var message = Camerad_V1_FrameReady()
                message.poolID = job.pool.id
                message.slot = UInt32(job.slot)
                message.sequence = frame.sequence
                message.presentationTimeNs = frame.timestampNanoseconds
                message.durationNs = frame.durationNanoseconds
                message.bytesUsed = UInt64(bytes)
                message.planes = job.pool.planes
                // Serialized once for every stream of the variant.
                var response = Camerad_V1_StreamResponse()
                response.frame = message
                let serialized: [UInt8] = try! response.serializedBytes()
                for id in job.streams where state.streams[id] != nil {
                    guard state.streams[id]!.poolID == job.pool.id else {
                        // Moved to a larger pool while this frame was converted.
                        state.streams[id]!.drops.add(.discontinuity, count: 1, sequence: frame.sequence)
                        continue
                    }
                    offer(message, serialized, from: job.pool, to: &state.streams[id]!)
                }
            }
        }
    }

    /// Whether a stream takes this frame, given its minimum frame duration. Half a
    /// device frame of slack keeps 30 fps from a 60 fps device steady.
    private func wants(_ stream: Stream, _ frame: CapturedFrame) -> Bool {
        let minimum = stream.options.minFrameDurationNanoseconds
        guard minimum > 0, let last = stream.lastOffered else { return true }
        return frame.timestampNanoseconds - last >= minimum - frame.durationNanoseconds / 2
    }

    /// Gives a stream a converted frame (`serialized`: its StreamResponse), or
    /// drops it for that stream alone.
    private func offer(
        _ frame: Camerad_V1_FrameReady, _ serialized: [UInt8], from pool: VariantPool, to stream: inout Stream
    ) {
        stream.lastOffered = frame.presentationTimeNs
        let slot = Int(frame.slot)
        var response = Camerad_V1_StreamResponse()
        if stream.options.inline {
            var inline = frame
            inline.data = Data(bytes: pool.slot(slot).baseAddress!, count: pool.bytesUsed[slot])
            response.frame = inline
            send(stream.drops, to: stream)
            stream.drops = DropTally()
            // Two frames behind in reading: this one is late.
            if !stream.writer.send(response, droppingAbove: 2 * pool.layout.capacity) {
                stream.drops.add(.frameWasLate, count: 1, sequence: frame.sequence)
            }
            return
        }
        let reference = SlotReference(poolID: pool.id, slot: slot)
        if stream.queue.isEmpty && stream.held.count < stream.options.maxFramesInFlight {
            pool.references[slot] += 1
            stream.held.insert(reference)
            send(stream.drops, to: stream)
            stream.drops = DropTally()
            if !stream.writer.send(serialized: serialized) {
                // The call is gone; close() follows.
                pool.references[slot] -= 1
                stream.held.remove(reference)
            }
        } else if stream.options.alwaysDiscardsLateFrames {
            stream.drops.add(.frameWasLate, count: 1, sequence: frame.sequence)
        } else if stream.queue.count < StreamOptions.queueLimit {
            pool.references[slot] += 1
            stream.queue.append((reference, frame, stream.drops))
            stream.drops = DropTally()
        } else {
            stream.drops.add(.outOfBuffers, count: 1, sequence: frame.sequence)
        }
    }

    /// Reports a tally to a stream's client. Never refused for a slow reader:
    /// a report is small, comes at most once per reason ahead of each frame,
    /// and a frame must not overtake the drops before it.
    func send(_ drops: DropTally, to stream: Stream) {
        for response in drops.messages { stream.writer.send(response) }
    }
}
