import Foundation

/// A program that streams from camerad and prints camctl's statistics as its
/// last line when SIGINT ends it: camctl (CaptureKit), the C library's
/// `camerad-stream`, the Python package's `python -m camerad stream`. Each
/// leaves the frames of the warm-up out of its figures (`--skip`).
struct StreamClient {
    let label: String
    let executable: String
    let arguments: (_ device: String, _ socket: String) -> [String]

    static func camctl(_ path: String) -> StreamClient {
        StreamClient(label: "camerad", executable: path) { device, socket in
            ["--socket", socket, "stream", device, "--skip", warmUpFrames, "--json"]
        }
    }

    static func c(_ path: String) -> StreamClient {
        StreamClient(label: "C client", executable: path) { device, socket in
            [device, "--socket", socket, "--count", "0", "--skip", warmUpFrames, "--json"]
        }
    }

    /// Through env, so the measured pid is Python's own (env execs it).
    static func python(package: String) -> StreamClient {
        StreamClient(label: "Python", executable: "/usr/bin/env") { device, socket in
            ["PYTHONPATH=\(package)", "python3", "-m", "camerad", "--socket", socket, "stream", device, "--count", "0",
             "--skip", warmUpFrames, "--json"]
        }
    }
}

/// The C and Python clients' rows, and what the Python zero-copy view saves.
struct ClientFigures {
    var c: [Int: Row] = [:]
    var python: [Int: Row] = [:]
    /// Microseconds per 1080p NV12 frame for `frame.array()` and for `frame.copy()`.
    var pythonView: (view: Double, copy: Double)?
}

/// Frames of the warm-up at 30 fps: what each client leaves out of its latency and drops.
private let warmUpFrames = String(Int(Double(Bench.warmUp) / 1e6 * 30))

extension Bench {
    /// Python's `frame.array()` (a view) against `frame.copy()` on 1080p NV12 frames, each timed in the process.
    func pythonViewVersusCopy(package: String) throws -> (view: Double, copy: Double) {
        let script = """
        import json, sys, time, camerad
        view = copy = 0
        with camerad.Client(sys.argv[1]) as client, client.stream("virtual-0") as stream:
            for n in range(90):
                with stream.frame(timeout=60) as f:
                    t0 = time.perf_counter_ns(); a = f.array(); t1 = time.perf_counter_ns(); c = f.copy(); t2 = time.perf_counter_ns()
                    if n >= 30:
                        view += t1 - t0; copy += t2 - t1
        print(json.dumps({"view_us": view / 60 / 1e3, "copy_us": copy / 60 / 1e3}))
        """
        return try withDaemon { _, socket in
            let object = try Self.report(try run("/usr/bin/env", ["PYTHONPATH=\(package)", "python3", "-c", script, socket]))
            return (object["view_us"] as? Double ?? 0, object["copy_us"] as? Double ?? 0)
        }
    }

    /// Every fan-out row: camerad (camctl) and GStreamer at each of
    /// `clientCounts`, the C and Python clients at each of `otherClients`,
    /// each run `rounds` times, one run of each in turn per round (every other
    /// round in the opposite order), so that the machine's drift over the
    /// minutes this takes (a shared machine's load, an idle one waking slower)
    /// reaches every row alike; a row adds its runs up. camerad's and GStreamer's failures end the bench; a C or
    /// Python client that cannot be measured is reported and left out.
    func fanOut(rounds: Int, clientCounts: [Int], gstreamer launcher: String?, otherClients: [Int], cClient: String,
                pythonPackage: String) throws -> FanOutFigures {
        struct Configuration {
            let clients: Int
            let rows: WritableKeyPath<FanOutFigures, [Int: Row]>
            let label: String
            let mayFail: Bool
            let measure: () throws -> Row
        }
        var figures = FanOutFigures()
        var configurations: [Configuration] = []
        for clients in clientCounts {
            configurations.append(Configuration(clients: clients, rows: \.camerad, label: "camerad", mayFail: false) {
                try fanOut(clients: clients)
            })
            if let launcher {
                configurations.append(Configuration(clients: clients, rows: \.gstreamer, label: "GStreamer", mayFail: false) {
                    try gstreamer(clients: clients, launcher: launcher)
                })
            }
        }
        let others: [(client: StreamClient, missing: String?, patience: Int, rows: WritableKeyPath<FanOutFigures, [Int: Row]>)] = [
            (.c(cClient), FileManager.default.isExecutableFile(atPath: cClient) ? nil
                : "\(cClient) is not built (make -C Clients/c)", 20, \.others.c),
            (.python(package: pythonPackage), FileManager.default.fileExists(atPath: pythonPackage + "/camerad/__init__.py")
                ? nil : "no package at \(pythonPackage)", 60, \.others.python),
        ]
        for (client, missing, patience, rows) in others {
            if let missing {
                figures.notMeasured.append("\(client.label): not measured: \(missing)")
                continue
            }
            for clients in otherClients {
                configurations.append(Configuration(clients: clients, rows: rows, label: client.label, mayFail: true) {
                    try fanOut(clients: clients, client: client, patience: patience)
                })
            }
        }
        var failed = Set<Int>()
        for round in 1...rounds {
            FileHandle.standardError.write(Data("camerad-bench: round \(round) of \(rounds)\n".utf8))
            // Every other round backwards, so that no row always follows the
            // same one (GStreamer's run is before camerad's as often as after).
            let order = round.isMultiple(of: 2) ? Array(configurations.indices.reversed()) : Array(configurations.indices)
            for index in order where !failed.contains(index) {
                let configuration = configurations[index]
                do {
                    let row = try configuration.measure()
                    figures[keyPath: configuration.rows][configuration.clients] =
                        figures[keyPath: configuration.rows][configuration.clients].map { $0.adding(row) } ?? row
                } catch where configuration.mayFail {
                    failed.insert(index)
                    figures[keyPath: configuration.rows][configuration.clients] = nil
                    figures.notMeasured.append("\(configuration.label), \(configuration.clients): not measured: \(error)")
                }
            }
        }
        return figures
    }
}

/// The fan-out rows, each its runs added up.
struct FanOutFigures {
    var camerad: [Int: Row] = [:]
    var gstreamer: [Int: Row] = [:]
    var others = ClientFigures()
    /// Why a row is missing.
    var notMeasured: [String] = []
}
