// swift-tools-version:6.0
import Foundation
import PackageDescription

// System libraries come from Debian's -dev packages (see README: "Fresh machine").
// Header paths are never hard-coded: each module map includes a shim.h and pkg-config
// supplies the flags (Debian keeps curl.h in a multiarch directory).
func systemLibrary(_ name: String, pkgConfig: String, apt: String) -> Target {
    .systemLibrary(name: name, pkgConfig: pkgConfig, providers: [.apt([apt])])
}

/// Which libgpiod the board is built for: 2 (Debian 13, Raspberry Pi OS trixie: libgpiod-dev 2.x) or 1 (Debian 12,
/// bookworm: 1.6), from pkg-config's version of the installed libgpiod (a cross build's PKG_CONFIG_SYSROOT_DIR and
/// PKG_CONFIG_LIBDIR reach it too). HOUND_SPEAKER_LIBGPIOD=1 or 2 says it outright. Sources/Board/GPIODv1.swift and
/// GPIODv2.swift are the two backends; nothing else knows which one was built.
func libgpiodGeneration() -> Int {
    if let forced = ProcessInfo.processInfo.environment["HOUND_SPEAKER_LIBGPIOD"], let generation = Int(forced) {
        return generation
    }
    let pkgConfig = Process()
    pkgConfig.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    pkgConfig.arguments = ["pkg-config", "--modversion", "libgpiod"]
    let output = Pipe()
    pkgConfig.standardOutput = output
    pkgConfig.standardError = FileHandle.nullDevice
    guard (try? pkgConfig.run()) != nil else { return 1 }
    let version = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    pkgConfig.waitUntilExit()
    // No libgpiod at all: the build stops at <gpiod.h> either way, and tools/install-deps.sh names the package.
    return Int(version.split(separator: ".").first ?? "1") ?? 1
}
let libgpiod: [SwiftSetting] = libgpiodGeneration() >= 2 ? [.define("LIBGPIOD_V2")] : []

let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
    // Members of a module are visible only where it is imported: with FoundationEssentials imported, a `contains`
    // must not quietly resolve to full Foundation's (which TOMLKit loads), or CoreFoundation and ICU come back.
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "hound-speaker",
    products: [
        .executable(name: "hound-speaker", targets: ["hound-speaker"]),
        // The local Houndify-compatible service (tests, demo, development): not part of the speaker's binary.
        .executable(name: "houndify-local", targets: ["houndify-local"]),
        // For the coverage-guided fuzzers in Tests/fuzz (a package of their own, built with -sanitize=fuzzer).
        .library(name: "Houndify", targets: ["Houndify"]),
        .library(name: "JSONKit", targets: ["JSONKit"]),
        .library(name: "SpeakerConfig", targets: ["SpeakerConfig"]),
        .library(name: "Timers", targets: ["Timers"]),
        .library(name: "SpeakerCore", targets: ["SpeakerCore"]),
        .library(name: "HoundifyAnswers", targets: ["HoundifyAnswers"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/LebJe/TOMLKit", exact: "0.6.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/adam-fowler/compress-nio", from: "1.5.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
    ],
    targets: [
        systemLibrary("CCurl", pkgConfig: "libcurl", apt: "libcurl4-openssl-dev"),
        systemLibrary("CCrypto", pkgConfig: "libcrypto", apt: "libssl-dev"),
        systemLibrary("CSpeex", pkgConfig: "speex", apt: "libspeex-dev"),
        systemLibrary("CSoxr", pkgConfig: "soxr", apt: "libsoxr-dev"),
        // The echo canceller (issue #19): speexdsp's AEC, preprocessor and resampler.
        systemLibrary("CSpeexDSP", pkgConfig: "speexdsp", apt: "libspeexdsp-dev"),
        // sndfile.h only: Audio loads libsndfile with dlopen while it reads or writes a file (Sources/Audio/Sndfile.swift).
        .systemLibrary(name: "CSndfile", providers: [.apt(["libsndfile1-dev"])]),
        systemLibrary("CALSA", pkgConfig: "alsa", apt: "libasound2-dev"),
        systemLibrary("CGPIOD", pkgConfig: "libgpiod", apt: "libgpiod-dev"),
        systemLibrary("CEspeakNG", pkgConfig: "espeak-ng", apt: "libespeak-ng-dev"),
        systemLibrary("CSystemd", pkgConfig: "libsystemd", apt: "libsystemd-dev"),
        systemLibrary("CMosquitto", pkgConfig: "libmosquitto", apt: "libmosquitto-dev"),
        // The personal head's fit at enrollment (issue #37): libLBFGS's L-BFGS minimiser.
        systemLibrary("CLBFGS", pkgConfig: "liblbfgs", apt: "liblbfgs-dev"),
        // What Swift cannot import directly: curl_easy_setopt/getinfo are variadic, ALSA's error handler too, and
        // sys/timex.h is not in the Glibc module.
        .target(name: "CShims", dependencies: ["CCurl", "CALSA"]),
        .target(name: "CPosix"),

        // The config reader: pure, like the settings it fills (AudioCore, BoardCore, HoundifyCore, SpeakerCore).
        .target(name: "SpeakerConfig",
                dependencies: ["HoundifyCore", "AudioCore", "BoardCore", "SpeakerCore", "JSONKit", "Platform",
                               .product(name: "TOMLKit", package: "TOMLKit"), .product(name: "Logging", package: "swift-log")],
                swiftSettings: strict),
        // Pure halves (no C library, no device), in the manner of NIOCore beside NIOPosix: sounds, levels and the
        // end-of-speech detector; LED states, patterns and button gestures. The speaker core builds on these.
        .target(name: "AudioCore", swiftSettings: strict),
        .target(name: "BoardCore", swiftSettings: strict),
        .target(name: "Audio",
                dependencies: ["AudioCore", "CSoxr", "CSpeexDSP", "CSndfile", "CALSA", "CShims", "Platform"],
                swiftSettings: strict),
        .target(name: "Board",
                dependencies: ["BoardCore", "CGPIOD", "CPosix", "Platform"],
                swiftSettings: strict + libgpiod),
        .target(name: "Speech",
                dependencies: ["CEspeakNG", "Audio", "Platform"],
                swiftSettings: strict),
        .target(name: "Platform", dependencies: ["CPosix"], swiftSettings: strict),
        // JSON values kept as they came (Houndify's opaque parts) and written back as ASCII.
        .target(name: "JSONKit", swiftSettings: strict),
        // Kitchen timers: the list, what each command does to it, when the next is due (pure; time passed in).
        .target(name: "Timers", dependencies: ["JSONKit"], swiftSettings: strict),
        // The speaker's decisions with no C, no drivers and no threads: the state machine and the core around it,
        // the ports it drives and the activity it reports. Assembly plugs the real drivers in; the test kit, fakes.
        .target(name: "SpeakerCore",
                dependencies: ["AudioCore", "BoardCore", "JSONKit", "Timers", .product(name: "Logging", package: "swift-log")],
                swiftSettings: strict),
        // The speaker's own commands (issue #63): the one table the offline grammar is written from and the
        // recogniser's words are read back with. Pure Swift: the recogniser itself is apart.
        .target(name: "OwnCommands", dependencies: ["SpeakerCore", "Timers", "JSONKit"], swiftSettings: strict),
        // The on-device recogniser over the speaker's own commands' grammar: PocketSphinx, opened with dlopen only
        // when a recording is to be understood on the device (Debian's libpocketsphinx3 and pocketsphinx-en-us).
        .target(name: "OfflineRecognition", dependencies: ["OwnCommands", "AudioCore", "SpeakerCore", "JSONKit", "Platform"], swiftSettings: strict),
        // The core's runtime: the loop that carries out its effects through the ports, the capture router and the
        // hot-phrase worker's thread (as NIOPosix runs what NIOCore describes).
        .target(name: "SpeakerRuntime",
                dependencies: ["SpeakerCore", "AudioCore", "BoardCore", "JSONKit", "Timers", "Platform", .product(name: "Logging", package: "swift-log")],
                swiftSettings: strict),
        // "OK Hound": front end, network and streaming detector in Swift (the model file comes from tools/hotphrase).
        // Optimised in debug builds too: unoptimised, its convolutions run a hundred times slower, and the tests feed
        // it a minute of audio.
        .target(name: "HotPhrase", dependencies: ["AudioCore", "Platform", "Digests", "CLBFGS"], swiftSettings: strict + [.unsafeFlags(["-O"], .when(configuration: .debug))]),
        // Running under systemd: sd_notify (readiness, watchdog) and log lines for the journal.
        .target(name: "Systemd",
                dependencies: ["CSystemd", .product(name: "Logging", package: "swift-log")],
                swiftSettings: strict),
        // SHA-256, HMAC-SHA256 and a constant-time compare: the one target that calls libcrypto.
        .target(name: "Digests", dependencies: ["CCrypto"], swiftSettings: strict),
        // Houndify's settings and what needs no C (the upload format, base64url), for the config reader.
        .target(name: "HoundifyCore", dependencies: ["JSONKit"], swiftSettings: strict),
        .target(name: "Houndify",
                dependencies: ["HoundifyCore", "JSONKit", "CCurl", "CShims", "Digests", "CSpeex", "Platform",
                               .product(name: "Logging", package: "swift-log")],
                swiftSettings: strict),
        .target(name: "LocalHoundify",
                dependencies: ["Houndify", "JSONKit", "CSpeex", "Audio", "AudioCore", "Speech", "Platform",
                               .product(name: "NIOCore", package: "swift-nio"),
                               .product(name: "NIOPosix", package: "swift-nio"),
                               .product(name: "NIOHTTP1", package: "swift-nio"),
                               .product(name: "CompressNIO", package: "compress-nio"),
                               .product(name: "Logging", package: "swift-log")],
                swiftSettings: strict),
        // Home Assistant over MQTT discovery (issue #65): the device, its entities' configs and states, and the commands
        // they send, pure; the broker connection (libmosquitto on a thread of its own) and the bridge to the speaker.
        .target(name: "HomeAssistantCore", dependencies: ["ControlCore", "JSONKit", "SpeakerCore", "BoardCore", "Timers"], swiftSettings: strict),
        // Houndify for its libcurl POST (LocalHTTP), which the conversation hand-off shares.
        .target(name: "HomeAssistant",
                dependencies: ["HomeAssistantCore", "CMosquitto", "ControlCore", "SpeakerCore", "BoardCore", "JSONKit", "Digests", "Platform", "Houndify",
                               .product(name: "Logging", package: "swift-log")],
                swiftSettings: strict),
        // The control API's commands in a pure target, so that ctl's client shares them without linking the NIO server.
        .target(name: "ControlCore", dependencies: ["AudioCore", "BoardCore", "JSONKit", "SpeakerCore", "Timers"], swiftSettings: strict),
        // The control API and kiosk page of `run` (HTTP and WebSocket on SwiftNIO): commands in, the speaker's
        // activity out, to any number of clients, none of which can hold up the loop.
        .target(name: "Control",
                dependencies: ["ControlCore", "SpeakerCore", "BoardCore", "JSONKit", "Timers", "Digests",
                               .product(name: "NIOCore", package: "swift-nio"),
                               .product(name: "NIOPosix", package: "swift-nio"),
                               .product(name: "NIOHTTP1", package: "swift-nio"),
                               .product(name: "NIOWebSocket", package: "swift-nio"),
                               .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                               .product(name: "Logging", package: "swift-log")],
                swiftSettings: strict),
        // The command-line support both programs use: the config and logging context, errors as one line and an
        // exit code, the `--config` option, signals.
        .target(name: "CommandSupport",
                dependencies: ["SpeakerConfig", "HoundifyCore", "Platform", "Systemd",
                               .product(name: "ArgumentParser", package: "swift-argument-parser"),
                               .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                               .product(name: "Logging", package: "swift-log")],
                swiftSettings: strict),
        // What Houndify's answers mean to the speaker: client commands (timers, alarms, volume, the owner's
        // phrases), the weather card, a failed search told as the speaker tells it; and the voice-search port over
        // the Houndify client.
        .target(name: "HoundifyAnswers",
                dependencies: ["Houndify", "HoundifyCore", "JSONKit", "SpeakerCore", "Timers", "Audio", "AudioCore"],
                swiftSettings: strict),
        // The devices made from the settings (the output volume, espeak-ng, the board), with the errors of any part
        // that cannot be made (AssemblyError): all that `say`, `board` and `hotphrase` need.
        .target(name: "DeviceAssembly",
                dependencies: ["Audio", "Board", "BoardCore", "Speech", "SpeakerConfig", "Platform"],
                swiftSettings: strict),
        // The Houndify client made from the settings (its configuration, the device ID, the conversation's file).
        .target(name: "HoundifyAssembly",
                dependencies: ["DeviceAssembly", "Houndify", "HoundifyCore", "SpeakerConfig", "Digests", "Platform",
                               .product(name: "Logging", package: "swift-log")],
                swiftSettings: strict),
        // The speaker put together from its settings: every driver adapted to the core's ports, the hot-phrase
        // listener, the state hook. Its errors are typed (AssemblyError); the commands choose the exit codes.
        .target(name: "Assembly",
                dependencies: ["DeviceAssembly", "HoundifyAssembly", "HoundifyAnswers", "SpeakerCore", "SpeakerRuntime", "SpeakerConfig", "Houndify", "HoundifyCore", "JSONKit", "Timers", "Audio", "AudioCore",
                               "Speech", "Board", "BoardCore", "HotPhrase", "OfflineRecognition", "Control", "ControlCore", "Platform", "Digests",
                               .product(name: "Logging", package: "swift-log")],
                swiftSettings: strict),
        // The commands of hound-speaker that need only the devices: say, hotphrase, board, the endpointer's scan.
        // They link no Houndify client, no control server and no speaker loop.
        .target(name: "DeviceCommands",
                dependencies: ["CommandSupport", "DeviceAssembly", "Audio", "AudioCore", "Speech", "Board", "BoardCore", "HotPhrase", "OfflineRecognition", "OwnCommands",
                               "SpeakerConfig", "JSONKit", "Platform", .product(name: "Logging", package: "swift-log")],
                swiftSettings: strict),
        // `text` and `voice`: a Houndify search and its answer, with no speaker loop and no control server.
        .target(name: "SearchCommands",
                dependencies: ["CommandSupport", "DeviceCommands", "DeviceAssembly", "HoundifyAssembly", "HoundifyAnswers", "Houndify", "HoundifyCore",
                               "Audio", "AudioCore", "SpeakerConfig", "JSONKit", .product(name: "Logging", package: "swift-log")],
                swiftSettings: strict),
        // The commands of hound-speaker that need the speaker (run, demo, doctor, enroll, ctl's client, ...), which
        // its argument parsers call.
        .target(name: "SpeakerCommands",
                dependencies: ["CommandSupport", "DeviceCommands", "SearchCommands", "DeviceAssembly", "HoundifyAssembly", "Assembly", "HoundifyAnswers", "Control", "ControlCore", "HomeAssistant", "HomeAssistantCore", "Systemd", "SpeakerCore", "SpeakerRuntime", "SpeakerConfig",
                               "Houndify", "HoundifyCore", "JSONKit", "Timers", "Audio", "AudioCore", "Speech", "Board", "BoardCore", "HotPhrase", "OfflineRecognition", "Platform",
                               .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                               .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                               .product(name: "Logging", package: "swift-log")],
                swiftSettings: strict),
        // Argument parsing only: every command's work is in DeviceCommands or SpeakerCommands.
        .executableTarget(name: "hound-speaker",
                dependencies: ["SpeakerCommands", "SearchCommands", "DeviceCommands", "CommandSupport",
                               .product(name: "ArgumentParser", package: "swift-argument-parser")],
                swiftSettings: strict),

        .executableTarget(name: "houndify-local",
                dependencies: ["CommandSupport", "LocalHoundify", "SpeakerConfig", "HoundifyCore",
                               .product(name: "ArgumentParser", package: "swift-argument-parser"),
                               .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                               .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                               .product(name: "Logging", package: "swift-log")],
                swiftSettings: strict),

        // Shared by the test targets: the one ALSA test configuration of the test process, fixture helpers.
        .target(name: "TestSupport", dependencies: ["Audio", "JSONKit", "Platform"], path: "Tests/TestSupport", swiftSettings: strict),
        // Fakes of the speaker core's ports and a manual clock, for the loop's fast, deterministic tests.
        .target(name: "SpeakerTestKit", dependencies: ["SpeakerCore", "SpeakerRuntime", "AudioCore", "BoardCore", "Timers", "JSONKit", "Platform", .product(name: "Logging", package: "swift-log")],
                path: "Tests/SpeakerTestKit", swiftSettings: strict),
        // Benchmarks for BENCHMARKS.md (not shipped): swift run -c release hound-speaker-bench ...
        .executableTarget(name: "hound-speaker-bench",
                         dependencies: ["Audio", "Speech", "SpeakerCore", "SpeakerRuntime", "Assembly", "HoundifyAnswers", "Board", "BoardCore", "CGPIOD", "Houndify", "LocalHoundify", "HotPhrase", "Platform",
                                        "OfflineRecognition", "OwnCommands", "JSONKit", "CSpeexDSP", .product(name: "Logging", package: "swift-log")],
                         swiftSettings: strict),
        .testTarget(name: "HoundifyTests", dependencies: ["Houndify", "HoundifyCore", "JSONKit", "LocalHoundify", "Audio", "Digests", "TestSupport"],
                    resources: [.copy("Fixtures")], swiftSettings: strict),
        // The core alone: its tests link no driver, no thread and no C library.
        .testTarget(name: "SpeakerCoreTests", dependencies: ["SpeakerCore", "AudioCore", "BoardCore", "JSONKit", "Timers"], swiftSettings: strict),
        .testTarget(name: "SpeakerConfigTests", dependencies: ["SpeakerConfig", "JSONKit", "BoardCore", "HoundifyCore", "AudioCore", "SpeakerCore", "TestSupport", .product(name: "Logging", package: "swift-log")], swiftSettings: strict),
        .testTarget(name: "AudioTests", dependencies: ["Audio", "AudioCore", "TestSupport"], swiftSettings: strict),
        .testTarget(name: "BoardTests", dependencies: ["Board", "TestSupport"], swiftSettings: strict),
        .testTarget(name: "SpeechTests", dependencies: ["Speech", "Audio", "CALSA", "TestSupport"], swiftSettings: strict),
        .testTarget(name: "SpeakerTests", dependencies: ["SpeakerCore", "SpeakerRuntime", "SpeakerTestKit", "DeviceAssembly", "HoundifyAssembly", "Assembly", "HoundifyAnswers", "HoundifyCore", "SpeakerCommands", "Platform", "SpeakerConfig", "CGPIOD", "JSONKit", "Timers", "LocalHoundify", "Houndify", "Audio", "HotPhrase", "Control", "ControlCore",
                                                        "Speech", "Board", "TestSupport", "OfflineRecognition", .product(name: "Logging", package: "swift-log")], swiftSettings: strict),
        // Fixtures are read from the source tree (Tests/HotPhraseTests/Fixtures), next to the shipped model.
        .testTarget(name: "HotPhraseTests", dependencies: ["HotPhrase", "Audio", "TestSupport"],
                    exclude: ["Fixtures"], swiftSettings: strict),
        .testTarget(name: "OwnCommandsTests", dependencies: ["OwnCommands", "OfflineRecognition", "SpeakerCore", "SpeakerTestKit", "Timers", "AudioCore", "Audio", "Platform", "TestSupport"], swiftSettings: strict),
        .testTarget(name: "TimersTests", dependencies: ["Timers", "JSONKit", "TestSupport"], swiftSettings: strict),
        .testTarget(name: "SystemdTests", dependencies: ["Systemd"], swiftSettings: strict),
        .testTarget(name: "PlatformTests", dependencies: ["Platform"], swiftSettings: strict),
        .testTarget(name: "ControlTests", dependencies: ["Control", "ControlCore", "SpeakerCore", "SpeakerRuntime", "AudioCore", "SpeakerTestKit", "JSONKit", "Timers", "Platform", "TestSupport",
                                                        .product(name: "NIOHTTP1", package: "swift-nio"),
                                                        .product(name: "NIOEmbedded", package: "swift-nio"),
                                                        .product(name: "NIOWebSocket", package: "swift-nio"),
                                                        .product(name: "Logging", package: "swift-log")], swiftSettings: strict),
        .testTarget(name: "HomeAssistantTests", dependencies: ["HomeAssistant", "HomeAssistantCore", "ControlCore", "SpeakerCore", "BoardCore", "JSONKit", "Timers", "Platform", "TestSupport",
                                                              .product(name: "Logging", package: "swift-log")], swiftSettings: strict),
        .testTarget(name: "CLITests", dependencies: ["Audio", "JSONKit", "TestSupport"], swiftSettings: strict),
    ],
    swiftLanguageModes: [.v6]
)
