// swift-tools-version:6.0
import PackageDescription

// BleKit's fuzzers (make fuzz, Fuzz/run): a package beside the library, so that what users depend
// on does not carry them. Fuzz/run builds it in debug mode with libFuzzer and AddressSanitizer.
//
// The harness (Targets/) drives parsers that are `package`-level in BleKit; another package reaches
// them through `@testable import`, which a debug build allows (SwiftPM compiles BleKit with
// -enable-testing), so none is made public for fuzzing. The same files are compiled into BleKit's
// BleReliabilityTests, which replays Regressions/ in make test.
let package = Package(
    name: "BleKitFuzz",
    dependencies: [
        // The library, by path; named, because a path dependency's identity is its folder's name.
        .package(name: "BleKit", path: ".."),
    ],
    targets: [
        // blekit's command-line parser: a target of BleKit that is no product (it is blekit's, not
        // the library's), so its sources (a link to Sources/BlekitCLI) are compiled here too.
        .target(name: "BlekitCLI", dependencies: [.product(name: "BleCore", package: "BleKit")], path: "BlekitCLI"),
        // The parsers libFuzzer drives; the driver replays inputs when built without -DBLEKIT_FUZZING.
        .target(name: "BleFuzzTargets",
                dependencies: [
                    .product(name: "BleCore", package: "BleKit"), .product(name: "BleDBus", package: "BleKit"),
                    .product(name: "BleDSL", package: "BleKit"), .product(name: "BleSim", package: "BleKit"),
                    .product(name: "BleGateway", package: "BleKit"), "BlekitCLI",
                ],
                path: "Targets"),
        .executableTarget(name: "blekit-fuzz", dependencies: ["BleFuzzTargets"], path: "Driver"),
    ],
    swiftLanguageModes: [.v6]
)
