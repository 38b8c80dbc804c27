// swift-tools-version:6.0
import PackageDescription

// Coverage-guided fuzzers (libFuzzer, from the Swift toolchain) for the parts that read what others send:
// the response stream parser, the decoding of Houndify's JSON, and the config loader.
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
    ],
    swiftLanguageModes: [.v6]
)
