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
        // The parsers libFuzzer drives, with blekit's command-line parser that the command-line
        // target drives. Harness/ holds two links: Targets (../Targets, the harness) and BlekitCLI
        // (../../Sources/BlekitCLI): BleKit's BlekitCLI is a target but no product (it is blekit's,
        // not the library's), so no other package can depend on it, and a target of that name here
        // would clash with BleKit's, so its sources are compiled into this module;
        // BLEKIT_FUZZ_PACKAGE tells the harness so. The driver replays inputs when built without
        // -DBLEKIT_FUZZING.
        .target(name: "BleFuzzTargets",
                dependencies: [
                    .product(name: "BleCore", package: "BleKit"), .product(name: "BleDBus", package: "BleKit"),
                    .product(name: "BleDSL", package: "BleKit"), .product(name: "BleSim", package: "BleKit"),
                    .product(name: "BleGateway", package: "BleKit"), .product(name: "BlueZVocabulary", package: "BleKit"),
                ],
                path: "Harness",
                swiftSettings: [.define("BLEKIT_FUZZ_PACKAGE")]),
        .executableTarget(name: "blekit-fuzz", dependencies: ["BleFuzzTargets"], path: "Driver"),
    ],
    swiftLanguageModes: [.v6]
)
