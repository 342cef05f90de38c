import Foundation

/// A program that streams from camerad and prints camctl's statistics as its
/// last line when SIGINT ends it: camctl (CaptureKit), the C library's
/// `camerad-stream`, the Python package's `python -m camerad stream`.
struct StreamClient {
    let label: String
    let executable: String
    let arguments: (_ device: String, _ socket: String) -> [String]

    static func camctl(_ path: String) -> StreamClient {
        StreamClient(label: "camerad", executable: path) { device, socket in ["--socket", socket, "stream", device, "--json"] }
    }

    static func c(_ path: String) -> StreamClient {
        StreamClient(label: "C client", executable: path) { device, socket in
            [device, "--socket", socket, "--count", "0", "--json"]
        }
    }

    /// Through env, so the measured pid is Python's own (env execs it).
    static func python(package: String) -> StreamClient {
        StreamClient(label: "Python", executable: "/usr/bin/env") { device, socket in
            ["PYTHONPATH=\(package)", "python3", "-m", "camerad", "--socket", socket, "stream", device, "--count", "0", "--json"]
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

    /// The C and Python clients at `counts` clients, measured as camerad's own rows.
    func otherClients(counts: [Int], cClient: String, pythonPackage: String) -> ClientFigures {
        var figures = ClientFigures()
        let clients: [(client: StreamClient, missing: String?, patience: Int, rows: WritableKeyPath<ClientFigures, [Int: Row]>)] = [
            (.c(cClient), FileManager.default.isExecutableFile(atPath: cClient) ? nil
                : "\(cClient) is not built (make -C Clients/c)", 20, \.c),
            (.python(package: pythonPackage), FileManager.default.fileExists(atPath: pythonPackage + "/camerad/__init__.py")
                ? nil : "no package at \(pythonPackage)", 60, \.python),
        ]
        for (client, missing, patience, rows) in clients {
            if let missing {
                print("  \(client.label): not measured: \(missing)")
                continue
            }
            for count in counts {
                do {
                    let row = try withDaemon { daemon, socket in
                        try streams(of: "virtual-0", clients: count, daemon: daemon, socket: socket, client: client,
                                    patience: patience)
                    }
                    figures[keyPath: rows][count] = row
                    print(row.line)
                } catch {
                    print("  \(client.label), \(count): not measured: \(error)")
                }
            }
        }
        if !figures.python.isEmpty {
            figures.pythonView = try? pythonViewVersusCopy(package: pythonPackage)
        }
        return figures
    }
}
