import CameraProtocol
@testable import CaptureKit
import Foundation
import Testing

@Suite struct CaptureErrorTests {
    @Test func codesAndProtocolReasonsCorrespondOneToOne() {
        for reason in Camerad_V1_ErrorReason.allCases {
            #expect(CaptureError.Code(reason).reason == reason, "\(reason)")
        }
        for code in CaptureError.Code.allCases {
            #expect(CaptureError.Code(code.reason) == code, "\(code)")
        }
        #expect(Set(CaptureError.Code.allCases.map(\.reason)).count == CaptureError.Code.allCases.count)
    }

    /// A recording's end bridges to NSError as AVFoundation's AVError does:
    /// the domain, Apple's code values, and the userInfo keys seed code reads.
    @Test func aRecordingsEndIsAnAVErrorAsAnNSError() {
        let limit = RecordingError(code: .maximumDurationReached, message: "the limit", recordingSuccessfullyFinished: true)
        let bridged = limit as NSError
        #expect(bridged.domain == AVFoundationErrorDomain && bridged.code == -11810 && bridged.code != noErr)
        #expect(bridged.userInfo[AVErrorRecordingSuccessfullyFinishedKey] as? Bool == true)
        #expect(bridged.localizedDescription == "the limit")
        let full = RecordingError(code: .diskFull, message: "full", recordingSuccessfullyFinished: false) as any Error
        #expect((full as NSError).userInfo[AVErrorRecordingSuccessfullyFinishedKey] as? Bool == false)
        #expect((full as? AVError)?.code == .diskFull && AVError.Code.diskFull.rawValue == -11807)
        #expect([AVError.Code.maximumFileSizeReached, .deviceWasDisconnected, .sessionWasInterrupted, .failed].map(\.rawValue)
                == [-11811, -11808, -11818, -11800])
        #expect("\(AVError.Code.maximumFileSizeReached)" == "maximumFileSizeReached")
    }

    /// The names seed code keeps its `AV` prefix on mean what CaptureKit's own do.
    @Test func avFoundationsPrefixedNamesAreCaptureKitsOwn() {
        #expect(Notification.Name.AVCaptureDeviceWasConnected == CaptureDevice.wasConnectedNotification)
        #expect(Notification.Name.AVCaptureDeviceWasDisconnected == CaptureDevice.wasDisconnectedNotification)
        #expect(Notification.Name.AVCaptureSessionRuntimeError == CaptureSession.runtimeErrorNotification)
        #expect(Notification.Name.AVCaptureSessionWasInterrupted == CaptureSession.wasInterruptedNotification)
        #expect(AVCaptureSessionErrorKey == CaptureSession.errorKey && AVCaptureSessionInterruptionReasonKey == CaptureSession.interruptionReasonKey)
        #expect(CapturePhotoSettings.self == PhotoSettings.self && AVVideoCodecType.h264 == CaptureMovieFileOutput.VideoCodecType.h264)
        let output = CaptureVideoDataOutput()
        #expect(output == output && (output as CaptureOutput) != CaptureAudioDataOutput() && Set([output, output]).count == 1)
    }

    @Test func protocolErrorsKeepTheirMessage() {
        let error = CaptureError(RPCError(.deviceLocked, "locked by pid 4242 (obs); retry when it unlocks"))
        #expect(error.code == .deviceLocked)
        #expect(error.description == "locked by pid 4242 (obs); retry when it unlocks")
    }
}

@Suite struct CMTimeTests {
    @Test func comparesAsRationalNumbers() {
        #expect(CMTime(value: 1, timescale: 30) == CMTime(value: 2, timescale: 60))
        #expect(CMTime(value: 1, timescale: 30) < CMTime(value: 1, timescale: 25))
        #expect(CMTimeMake(value: 1, timescale: 60).seconds == 1.0 / 60)
        #expect(!CMTime.invalid.isValid && CMTime.invalid.seconds.isNaN)
        #expect(Set([CMTime(value: 1, timescale: 30), CMTime(value: 2, timescale: 60)]).count == 1)
    }

    @Test func nanosecondTimestampsCompareWithoutOverflow() {
        let capture = CMTime(value: 1_234_567_890_123, timescale: 1_000_000_000)
        #expect(capture < CMTime(value: 1_234_567_890_124, timescale: 1_000_000_000))
        #expect(CMTime(value: 1, timescale: 30) < capture)
        #expect(capture < CMTime(value: Int64(Int32.max) * 1000, timescale: 1))
        #expect(CMTime(value: 2_469_135_780_246, timescale: 2_000_000_000) == capture)
    }

    @Test func frameRateRangesReadLikeAVFrameRateRange() {
        var range = Camerad_V1_FrameRateRange()
        range.minFrameDuration.numerator = 1
        range.minFrameDuration.denominator = 60
        range.maxFrameDuration.numerator = 1
        range.maxFrameDuration.denominator = 1
        let converted = FrameRateRange(range)
        #expect(converted.maxFrameRate == 60 && converted.minFrameRate == 1)
        #expect(!converted.isDiscrete)
        #expect(converted.description == "1-60 fps")
    }
}

@Suite struct ProtocolEnumTests {
    /// A proto case and the CaptureKit case it becomes have the same name.
    static func sameNames<Proto: CaseIterable, Mine>(_ cases: Proto.AllCases, _ convert: (Proto) -> Mine?) -> Bool {
        cases.allSatisfy { proto in
            let name = "\(proto)"
            guard let mine = convert(proto) else { return name == "unspecified" }
            return "\(mine)" == name
        }
    }

    @Test func avFoundationModesMapCaseForCase() {
        #expect(Self.sameNames(Camerad_V1_FocusMode.allCases, CaptureDevice.FocusMode.init))
        #expect(Self.sameNames(Camerad_V1_ExposureMode.allCases, CaptureDevice.ExposureMode.init))
        #expect(Self.sameNames(Camerad_V1_WhiteBalanceMode.allCases, CaptureDevice.WhiteBalanceMode.init))
        #expect(Self.sameNames(Camerad_V1_TorchMode.allCases, CaptureDevice.TorchMode.init))
        #expect(Self.sameNames(Camerad_V1_FlashMode.allCases, CaptureDevice.FlashMode.init))
    }

    @Test func appleRawValuesAreKept() {
        #expect(CaptureDevice.FocusMode.continuousAutoFocus.rawValue == 2)
        #expect(CaptureDevice.ExposureMode.custom.rawValue == 3)
        #expect(CaptureDevice.Position.front.rawValue == 2)
    }
}
