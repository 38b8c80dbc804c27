// swift-tools-version:6.0
import PackageDescription

// Coverage-guided fuzzers (libFuzzer, from the Swift toolchain) for the parts that read what others send:
// the response stream parser, the decoding of Houndify's JSON, the config loader, Houndify's timer and alarm commands
// as the speaker carries them out, and the timers file.
// A package of its own because each fuzzer's main() comes from libFuzzer: build and run with Tests/fuzz/run.sh.
let package = Package(
    name: "hound-speaker-fuzz",
    dependencies: [.package(name: "hound-speaker", path: "../..")],
    targets: [
        .target(name: "FuzzDriver"),
        .executableTarget(name: "FuzzStream", dependencies: ["FuzzDriver", .product(name: "Houndify", package: "hound-speaker")]),
        .executableTarget(name: "FuzzResponse", dependencies: ["FuzzDriver", .product(name: "Houndify", package: "hound-speaker"),
                                                                .product(name: "JSONKit", package: "hound-speaker")]),
        .executableTarget(name: "FuzzConfig", dependencies: ["FuzzDriver", .product(name: "SpeakerConfig", package: "hound-speaker")]),
        .target(name: "TimerChecks", dependencies: [.product(name: "Timers", package: "hound-speaker")]),
        .executableTarget(name: "FuzzTimerCommands",
                          dependencies: ["FuzzDriver", "TimerChecks", .product(name: "HoundifyAnswers", package: "hound-speaker"),
                                         .product(name: "SpeakerCore", package: "hound-speaker"),
                                         .product(name: "Houndify", package: "hound-speaker"),
                                         .product(name: "JSONKit", package: "hound-speaker"),
                                         .product(name: "Timers", package: "hound-speaker")]),
        .executableTarget(name: "FuzzTimersFile",
                          dependencies: ["FuzzDriver", "TimerChecks", .product(name: "JSONKit", package: "hound-speaker"),
                                         .product(name: "Timers", package: "hound-speaker")]),
    ],
    swiftLanguageModes: [.v6]
)
