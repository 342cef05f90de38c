// swift-tools-version: 6.0
import PackageDescription

let package = Package(
    name: "camerad",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "CaptureKit", targets: ["CaptureKit"]),
        .executable(name: "camerad", targets: ["camerad"]),
        .executable(name: "camctl", targets: ["camctl"]),
        .executable(name: "camerad-bench", targets: ["camerad-bench"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-protobuf", exact: "1.39.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        // `make docs`: CaptureKit's reference and articles as static HTML.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // MARK: - C modules

        /// What Swift cannot import: `CMSG_*`, `memfd_create`, `SO_PEERCRED`, ioctl macros.
        .target(name: "CCameraShims"),
        /// libv4l2's variadic calls and the VIDIOC_* numbers.
        .target(name: "CV4L2", linkerSettings: [.linkedLibrary("v4l2")]),
        .systemLibrary(name: "CUDev", pkgConfig: "libudev"),
        .systemLibrary(name: "CTurboJPEG", pkgConfig: "libturbojpeg"),
        .systemLibrary(name: "CExif", pkgConfig: "libexif"),
        .systemLibrary(name: "CSwresample", pkgConfig: "libswresample"),
        .systemLibrary(name: "CALSA", pkgConfig: "alsa"),
        /// libavcodec and libavformat (FFmpeg 5.1): CameraEncoding's alone.
        .systemLibrary(name: "CFFmpeg", pkgConfig: "libavformat"),
        /// libyuv ships no pkg-config file; the module map links `yuv`.
        .systemLibrary(name: "CYUV"),

        // MARK: - Libraries

        .target(name: "CameraIPC", dependencies: ["CCameraShims"]),
        .target(
            name: "CameraProtocol",
            dependencies: [
                "CameraIPC",
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "Logging", package: "swift-log"),
            ],
            exclude: ["Generated/proto-hashes.txt"]
        ),
        .target(name: "CameraMedia", dependencies: ["CTurboJPEG", "CYUV", "CExif", "CSwresample"]),
        /// Encoders (H.264 through libx264, AAC) and the movie muxer (MP4, MOV, written
        /// in fragments to a descriptor): the only code that sees FFmpeg's types.
        .target(name: "CameraEncoding", dependencies: ["CameraMedia", "CFFmpeg", "CCameraShims"]),
        /// One V4L2 capture node through libv4l2: formats, controls, mmap streaming.
        .target(name: "V4L2", dependencies: ["CV4L2"]),
        .target(
            name: "CameraDaemon",
            dependencies: [
                "CameraIPC", "CameraProtocol", "CameraMedia", "CameraEncoding", "CCameraShims", "V4L2", "CUDev", "CALSA",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(name: "CaptureKit", dependencies: ["CameraIPC", "CameraProtocol"]),
        .target(
            name: "CameraTestSupport",
            dependencies: [
                "CameraIPC", "CameraMedia", "CameraProtocol", "CaptureKit",
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ]
        ),

        // MARK: - Executables

        .executableTarget(
            name: "camerad",
            dependencies: [
                "CameraDaemon", "CameraProtocol",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "camctl",
            dependencies: [
                "CaptureKit", "CameraIPC", "CameraMedia",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),

        /// `make bench`: fan-out figures against memcpy and GStreamer.
        // Its wake floor raises camerad's own FrameSignal.
        .executableTarget(name: "camerad-bench", dependencies: ["CameraIPC", "CameraMedia", "CameraEncoding"]),

        // MARK: - Tests

        .testTarget(name: "CameraIPCTests", dependencies: ["CameraIPC", "CameraTestSupport", "CCameraShims"]),
        .testTarget(
            name: "CameraProtocolTests",
            dependencies: [
                "CameraProtocol", "CameraIPC", "CameraTestSupport",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(name: "CameraMediaTests", dependencies: ["CameraMedia", "CameraTestSupport", "CYUV", "CTurboJPEG", "CExif"]),
        .testTarget(name: "CameraEncodingTests", dependencies: ["CameraEncoding", "CameraMedia", "CameraTestSupport"]),
        .testTarget(
            name: "CameraDaemonTests",
            /// CV4L2 only to check camerad's control numbers against the kernel's; CCameraShims for a hostile client's epoll calls.
            dependencies: ["CameraDaemon", "CameraProtocol", "CameraIPC", "CameraMedia", "CameraEncoding", "CameraTestSupport", "CV4L2", "CCameraShims"]
        ),
        .testTarget(
            name: "CaptureKitTests",
            dependencies: ["CaptureKit", "CameraProtocol", "CameraIPC", "CameraTestSupport", "CameraMedia", "CYUV"]
        ),
        .testTarget(name: "CamctlTests", dependencies: ["CameraTestSupport"], exclude: ["Snapshots"]),
        /// Boots scripts/vivid-vm and runs the V4L2 tests inside it.
        .testTarget(name: "VividTests", dependencies: ["CameraTestSupport", "CaptureKit", "CameraMedia", "CameraProtocol", "V4L2", "CALSA"]),
    ]
)
