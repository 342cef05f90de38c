import CameraIPC
import CameraProtocol
import CameraTestSupport
import Foundation
import SwiftProtobuf
import Testing

/// A real client, on its own event loop.
func connectClient(_ daemon: DaemonProcess, name: String = "test") async throws -> (RPCClient, EventLoop) {
    let loop = try EventLoop(name: name)
    return (try await RPCClient.connect(to: daemon.socketPath, clientName: name, loop: loop), loop)
}

/// Asserts a fresh client can still list the daemon's devices.
func expectServes(_ daemon: DaemonProcess, devices: Int = 1) async throws {
    let raw = try RawProtocolClient(path: daemon.socketPath)
    try await raw.hello(name: "second-client")
    let (responses, status) = try await raw.call(CameraService.listDevices.name, request: [])
    #expect(status.code == .ok)
    let list = try Camerad_V1_ListDevicesResponse(serializedBytes: try #require(responses.first))
    #expect(list.devices.count == devices)
}

/// A raw client that said Hello and holds the configuration lock of `device`.
func lockedClient(_ daemon: DaemonProcess, device: String = "virtual-0") async throws -> RawProtocolClient {
    let raw = try RawProtocolClient(path: daemon.socketPath)
    try await raw.hello()
    var lock = Camerad_V1_LockForConfigurationRequest()
    lock.uniqueID = device
    let (_, locked) = try await raw.call(CameraService.lockForConfiguration.name, request: try lock.serializedBytes())
    #expect(locked.code == .ok, "\(locked.message)")
    return raw
}

@Suite struct BadInputTests {
    /// Every number a configuration carries, out of range or not a number, is
    /// refused with INVALID_ARGUMENT; nothing is applied and the daemon serves on.
    @Test func nonsenseConfigurationValuesAreRefusedAndTheDaemonServesOn() async throws {
        try await withRunningDaemon { daemon in
            let raw = try await lockedClient(daemon)
            var nonsense: [Camerad_V1_DeviceConfiguration] = []
            for value in [Float.nan, .infinity, -1, 1e30] {
                var configuration = Camerad_V1_DeviceConfiguration()
                configuration.lensPosition = value
                nonsense.append(configuration)
                configuration = Camerad_V1_DeviceConfiguration()
                configuration.iso = value
                nonsense.append(configuration)
                configuration = Camerad_V1_DeviceConfiguration()
                configuration.whiteBalanceTemperature = value
                nonsense.append(configuration)
                configuration = Camerad_V1_DeviceConfiguration()
                configuration.torchLevel = value
                nonsense.append(configuration)
                configuration = Camerad_V1_DeviceConfiguration()
                configuration.videoZoomFactor = Double(value)
                nonsense.append(configuration)
                configuration = Camerad_V1_DeviceConfiguration()
                configuration.focusPointOfInterest.x = Double(value)
                nonsense.append(configuration)
            }
            var zeroDuration = Camerad_V1_DeviceConfiguration()
            zeroDuration.activeMinFrameDuration = Camerad_V1_Fraction()
            nonsense.append(zeroDuration)
            var zeroExposure = Camerad_V1_DeviceConfiguration()
            zeroExposure.exposureDuration.numerator = 1
            nonsense.append(zeroExposure)
            nonsense.append(Camerad_V1_DeviceConfiguration())
            for configuration in nonsense {
                var request = Camerad_V1_ConfigureDeviceRequest()
                request.uniqueID = "virtual-0"
                request.configuration = configuration
                let (_, status) = try await raw.call(CameraService.configureDevice.name, request: try request.serializedBytes())
                #expect(status.code == .invalidArgument, "\(configuration): \(status.message)")
            }
            try await expectServes(daemon)
        }
    }

    @Test func aCallBeforeHelloFailsThePreconditionAndTheDaemonServesOn() async throws {
        try await withRunningDaemon { daemon in
            let raw = try RawProtocolClient(path: daemon.socketPath)
            let (_, status) = try await raw.call(CameraService.listDevices.name, request: [])
            #expect(status.code == .failedPrecondition)
            #expect(status.message.contains("Hello"))
            try await expectServes(daemon)
        }
    }

    @Test func anUnknownMethodIsUnimplementedAndTheDaemonServesOn() async throws {
        try await withRunningDaemon { daemon in
            let raw = try RawProtocolClient(path: daemon.socketPath)
            try await raw.hello()
            let (_, status) = try await raw.call("/camerad.v1.Camera/FlyToTheMoon", request: [])
            #expect(status.code == .unimplemented)
            try await expectServes(daemon)
        }
    }

    @Test func anUndecodableRequestIsAnInvalidArgumentAndTheDaemonServesOn() async throws {
        try await withRunningDaemon { daemon in
            let raw = try RawProtocolClient(path: daemon.socketPath)
            try await raw.hello()
            let (_, status) = try await raw.call(CameraService.getDevice.name, request: [0x0A, 0xFF, 0xFF])
            #expect(status.code == .invalidArgument)
            try await expectServes(daemon)
        }
    }

    @Test func aLengthOverTheLimitClosesTheConnectionAndTheDaemonServesOn() async throws {
        try await withRunningDaemon { daemon in
            let raw = try RawProtocolClient(path: daemon.socketPath)
            try await raw.hello()
            let length = UInt32(Frame.maxPayloadLength + 1)
            try await raw.sendBytes([UInt8(length >> 24), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF)])
            #expect(await raw.waitForClose())
            try await expectServes(daemon)
        }
    }

    @Test func bytesThatAreNotAnEnvelopeCloseTheConnectionAndTheDaemonServesOn() async throws {
        try await withRunningDaemon { daemon in
            let raw = try RawProtocolClient(path: daemon.socketPath)
            try await raw.sendBytes(Frame.encode(Array("definitely not protobuf".utf8)))
            #expect(await raw.waitForClose())
            let http = try RawProtocolClient(path: daemon.socketPath)
            try await http.sendBytes(Array("GET / HTTP/1.1\r\nHost: camerad\r\n\r\n".utf8))
            #expect(await http.waitForClose())
            try await expectServes(daemon)
        }
    }

    /// A daemon that waited on the stalled client would never finish the
    /// other client's calls: the time limit is the bound, not a measure.
    @Test(.timeLimit(.minutes(4)))
    func aClientThatStopsReadingIsDisconnectedWithoutHoldingUpOthers() async throws {
        try await withRunningDaemon { daemon in
            // The stalled client watches devices twenty times over and never reads.
            let stalled = try RawProtocolClient(path: daemon.socketPath)
            try await stalled.hello()
            for callID in 1...20 as ClosedRange<UInt64> {
                var request = Camerad_V1_WatchDevicesRequest()
                request.includeExisting = true
                try await stalled.send(EnvelopeCodec.start(
                    callID: callID, method: CameraService.watchDevices.name, request: try request.serializedBytes()))
            }
            // Another client makes the daemon produce megabytes of events for it.
            let (admin, loop) = try await connectClient(daemon, name: "admin")
            let clock = ContinuousClock()
            var slowest = Duration.zero
            for _ in 0..<400 {
                let start = clock.now
                var add = Camerad_V1_AddVirtualCameraRequest()
                add.index = 9
                _ = try await admin.unary(CameraService.addVirtualCamera, add)
                var remove = Camerad_V1_RemoveVirtualCameraRequest()
                remove.uniqueID = "virtual-9"
                _ = try await admin.unary(CameraService.removeVirtualCamera, remove)
                slowest = max(slowest, clock.now - start)
            }
            print("beside a client that stopped reading: 800 calls, the slowest pair took \(slowest)")
            #expect(await stalled.waitForClose(timeout: .seconds(20)), "the stalled client was disconnected")
            #expect(daemon.logText.contains("stopped reading"))
            try await expectServes(daemon)
            admin.close()
            loop.stop()
        }
    }
}

@Suite struct DaemonLifecycleTests {
    @Test func aSecondDaemonOnTheSameSocketExitsWithOneLine() async throws {
        try await withRunningDaemon { daemon in
            let second = try await runProcess(Binaries.camerad, ["--socket", daemon.socketPath])
            #expect(second.status == 1)
            let lines = second.standardError.split(separator: "\n")
            #expect(lines.count == 1)
            #expect(lines.first?.contains("already serving \(daemon.socketPath)") == true)
            #expect(lines.first?.contains("pid \(daemon.pid)") == true)
            try await expectServes(daemon)
        }
    }

    @Test func aStaleSocketFileIsReplaced() async throws {
        try await withTemporarySocketPath { path in
            makeStaleSocketFile(at: path)
            #expect(FileManager.default.fileExists(atPath: path) && !UnixSocket.isServed(path))
            let daemon = try await DaemonProcess(socketPath: path)
            try await expectServes(daemon)
            await daemon.stop()
        }
    }

    @Test(arguments: [SIGTERM, SIGINT])
    func aSignalEndsStreamsTellsClientsRemovesTheSocketAndExitsZero(signal: Int32) async throws {
        try await withTemporarySocketPath { path in
            let daemon = try await DaemonProcess(socketPath: path)
            let (client, loop) = try await connectClient(daemon)
            var events = try client.serverStreaming(CameraService.watchDevices, Camerad_V1_WatchDevicesRequest()).makeAsyncIterator()
            #expect(try await events.next()?.kind == .subscribed)
            #expect(await daemon.stop(signal: signal) == 0)
            let error = await #expect(throws: RPCError.self) { _ = try await events.next() }
            #expect(error?.reason == .shuttingDown)
            #expect(!FileManager.default.fileExists(atPath: path))
            loop.stop()
        }
    }

    /// camerad catches signals before its socket exists, so a client that signals
    /// it the moment the socket appears still gets a clean shutdown.
    @Test func aSignalTheMomentTheSocketAppearsStillShutsDownCleanly() async throws {
        try await withTemporarySocketPath { path in
            for _ in 0..<10 {
                let process = Process()
                process.executableURL = URL(fileURLWithPath: Binaries.camerad)
                process.arguments = ["--socket", path, "--log-level", "error"]
                try process.run()
                let deadline = ContinuousClock.now + .seconds(20)
                while !FileManager.default.fileExists(atPath: path) && ContinuousClock.now < deadline {
                    await Task.yield()
                }
                kill(process.processIdentifier, SIGTERM)
                let exitDeadline = ContinuousClock.now + .seconds(10)
                while process.isRunning && ContinuousClock.now < exitDeadline {
                    try await Task.sleep(for: .milliseconds(5))
                }
                #expect(!process.isRunning, "the signal was lost")
                if process.isRunning {
                    kill(process.processIdentifier, SIGKILL)
                    while process.isRunning { try await Task.sleep(for: .milliseconds(5)) }
                }
                #expect(process.terminationReason == .exit && process.terminationStatus == 0)
                #expect(!FileManager.default.fileExists(atPath: path))
            }
        }
    }

    @Test func theSocketIs0660ByDefaultAndFollowsSocketMode() async throws {
        try await withRunningDaemon { daemon in
            let attributes = try FileManager.default.attributesOfItem(atPath: daemon.socketPath)
            #expect(attributes[.posixPermissions] as? Int == 0o660)
        }
        try await withRunningDaemon(arguments: ["--socket-mode", "0600", "--socket-group", "daemon"]) { daemon in
            let attributes = try FileManager.default.attributesOfItem(atPath: daemon.socketPath)
            #expect(attributes[.posixPermissions] as? Int == 0o600)
            #expect(attributes[.groupOwnerAccountName] as? String == "daemon")
        }
    }

    @Test func withoutSocketItListensAtCAMERAD_SOCKETThenXDG_RUNTIME_DIR() async throws {
        try await withTemporaryDirectory { directory in
            let explicit = directory + "/from-env.sock"
            let first = try await DaemonProcess(
                socketPath: explicit, environment: ["CAMERAD_SOCKET": explicit, "XDG_RUNTIME_DIR": directory],
                passSocket: false)
            try await expectServes(first)
            #expect(await first.stop() == 0)

            let runtime = try await DaemonProcess(
                socketPath: directory + "/camerad.sock", environment: ["CAMERAD_SOCKET": "", "XDG_RUNTIME_DIR": directory],
                passSocket: false)
            try await expectServes(runtime)
            #expect(await runtime.stop() == 0)
        }
    }

    @Test func virtualCamerasAreFrontThenBackLikeAPhone() async throws {
        try await withRunningDaemon(virtualCameras: 3) { daemon in
            let (client, loop) = try await connectClient(daemon)
            let devices = try await client.unary(CameraService.listDevices, Camerad_V1_ListDevicesRequest()).devices
            #expect(devices.map(\.uniqueID) == ["virtual-0", "virtual-1", "virtual-2"])
            #expect(devices.map(\.position) == [.front, .back, .unspecified])
            loop.stop()
        }
        try await withRunningDaemon(virtualCameras: 1) { daemon in
            let (client, loop) = try await connectClient(daemon)
            let devices = try await client.unary(CameraService.listDevices, Camerad_V1_ListDevicesRequest()).devices
            #expect(devices.map(\.position) == [.unspecified])
            loop.stop()
        }
    }

    @Test func helloReportsVersionFeaturesAndTheCallersCredentials() async throws {
        try await withRunningDaemon { daemon in
            let (client, loop) = try await connectClient(daemon)
            #expect(client.hello.serverVersion == "0.1.0")
            #expect(client.hello.protocolVersion == CameraService.protocolVersion)
            #expect(Set(client.hello.features).isSuperset(of: ["devices", "device-events", "virtual-cameras", "ping"]))
            #expect(client.hello.serverPid == daemon.pid)
            #expect(client.hello.clientPid == getpid())
            loop.stop()
        }
    }

    @Test func clientsThatComeAndGoLeaveNoDescriptorsInTheDaemon() async throws {
        try await withRunningDaemon { daemon in
            try await expectServes(daemon)
            // The last client's connection may still be closing inside the daemon.
            var baseline = daemon.openDescriptorCount
            for _ in 0..<20 {
                try await Task.sleep(for: .milliseconds(10))
                baseline = min(baseline, daemon.openDescriptorCount)
            }
            for round in 0..<100 {
                let raw = try RawProtocolClient(path: daemon.socketPath)
                try await raw.hello()
                try await raw.send(EnvelopeCodec.start(
                    callID: 5, method: CameraService.watchDevices.name, request: []))
                if round % 2 == 0 { _ = try await raw.receive() }
                // Dropped without a goodbye, as a killed process would.
            }
            #expect(await waitUntil { daemon.openDescriptorCount <= baseline }, "descriptors left in the daemon")
            try await expectServes(daemon)
        }
    }
}
