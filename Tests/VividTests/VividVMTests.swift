import CameraTestSupport
import Foundation
import Testing

/// Boots the vivid VM once and runs ``VividGuestTests`` inside it, with this
/// very test binary: the host's root is the guest's, read-only.
@Suite struct VividVMTests {
    @Test(.enabled(if: !Vivid.isGuest, "this is the guest"), .timeLimit(.minutes(11)))
    func theV4L2BackendPassesEveryTestAgainstVivid() async throws {
        let testBinary = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        let result = try await runProcess(
            "\(PackageFiles.root.path)/scripts/vivid-vm",
            ["--vivid", Vivid.moduleOptions, "--", testBinary, "--testing-library", "swift-testing",
             "--filter", "VividGuestTests"],
            environment: ["NO_COLOR": "1"], timeout: .seconds(620))
        let output = result.standardOutput + result.standardError
        // CI's log shows what happened in the guest.
        print(output.split(separator: "\n").filter {
            $0.contains("VividGuestTests") || $0.contains("✘") || $0.contains("Test run") || $0.hasPrefix(Vivid.figures)
        }.joined(separator: "\n"))
        #expect(result.status != 125, "the VM did not boot: \(output)")
        #expect(result.status == 0, "tests failed in the VM:\n\(output)")
        #expect(output.contains("Test run with \(VividGuestTests.testCount) tests"),
                "the guest ran another number of tests than \(VividGuestTests.testCount):\n\(output)")
        #expect(!output.contains("skipped"), "a guest test skipped:\n\(output)")
    }
}
