import CameraIPC
import CameraProtocol
import Synchronization

extension CameraServiceHandlers {
    /// How often a recording's call hears its figures.
    static let recordingProgressInterval = Duration.milliseconds(500)

    /// A movie file (record.proto): the first request starts it with the
    /// file's descriptor; NextFile hands it over to another file at a
    /// keyframe; StopRecording, a half-close or a cancel stops it.
    /// RecordingStarted once its first keyframe is written, its figures every
    /// 500 ms, RecordingFinished last, once the file is finished; then OK, or
    /// INVALID_ARGUMENT for a request that made no sense after the start (the
    /// recording was stopped, its file finished).
    @Sendable func record(
        _ requests: RequestStream<Camerad_V1_RecordRequest>, _ writer: ResponseWriter<Camerad_V1_RecordResponse>,
        _ context: RPCContext
    ) async throws {
        var iterator = requests.withDescriptors.makeAsyncIterator()
        guard let first = try await iterator.next() else { return }
        guard case .start(let start)? = first.message.kind else {
            throw RPCError(.invalidArgument, "a recording's first request must start it (StartRecording, with the movie file's descriptor)")
        }
        guard Int(start.fdIndex) < first.descriptors.count else {
            throw RPCError(.invalidArgument, "StartRecording names descriptor \(start.fdIndex) but brought \(first.descriptors.count); "
                + "open the movie file for writing and send its descriptor with StartRecording")
        }
        let (events, sink) = AsyncStream.makeStream(of: Recordings.Event.self)
        let recording = try await recordings.start(RecordingRequest(start), descriptor: first.descriptors[Int(start.fdIndex)], for: context.budgetOwner) { event in
            sink.wake(with: event)
            if case .finished = event { sink.wakeFinished() }
        }
        let refusal = OrderedMutex<RPCError?>(.recordingHandles, nil)
        // The client's requests: a stop (or the end of its requests) stops the recording. A task of its own:
        // this call's task waits for the file's events meanwhile (and cancels it at the end).
        let reader = Task { [iterator] in
            var requests = iterator
            do {
                while let request = try await requests.next() {
                    switch request.message.kind {
                    case .stop: recording.stop(); return
                    case .nextFile(let next):
                        guard Int(next.fdIndex) < request.descriptors.count else {
                            throw RPCError(.invalidArgument, "NextFile names descriptor \(next.fdIndex) but brought \(request.descriptors.count); "
                                + "send the next file's descriptor with it")
                        }
                        try await recording.handOver(to: request.descriptors[Int(next.fdIndex)])
                    case .start: throw RPCError(.invalidArgument, "this call records already; start another Record call for another file")
                    case nil: throw RPCError(.invalidArgument, "a recording's request must start, hand over (NextFile) or stop it")
                    }
                }
            } catch let error as RPCError {
                refusal.withLock { $0 = error }
            } catch let error as CameraError {
                refusal.withLock { $0 = error.rpcError }
            } catch {}
            recording.stop()
        }
        // Progress goes through the same stream as the other events: one loop sends them all, in order.
        // Its clock is the event loop's, not a task sleeping on the cooperative pool.
        let progress = registry.timers.repeating(every: Self.recordingProgressInterval) {
            sink.wake(with: .progress(recording.recorder.figures))
        }
        defer {
            reader.cancelUnlocked()
            progress.stop()
        }
        // Until the file is finished, or the call ends (the client went: its file is finished all the same).
        await withTaskCancellationHandler {
            var file = 0
            for await event in events {
                var response = Camerad_V1_RecordResponse()
                switch event {
                case .started(let started): response.started = Camerad_V1_RecordingStarted(started)
                case .progress(let figures):
                    // Figures read just before a hand-over are the finished file's: not the news they would seem.
                    guard figures.file == file else { continue }
                    response.progress = Camerad_V1_RecordingFigures(figures)
                case .handedOver(let finished, let start):
                    file += 1
                    response.handedOver.figures = Camerad_V1_RecordingFigures(finished)
                    response.handedOver.startTimeNs = start
                case .finished(let ending, let figures): response.finished = Camerad_V1_RecordingFinished(ending, figures)
                }
                guard writer.send(response) else { continue }
            }
        } onCancel: {
            recording.stop()
        }
        if let refused = refusal.withLock({ $0 }) { throw refused }
    }
}
