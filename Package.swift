// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "BleKit",
    products: [
        .library(name: "BleRuntime", targets: ["BleRuntime"]),
        .library(name: "BleDBus", targets: ["BleDBus"]),
        .library(name: "BleTestSupport", targets: ["BleTestSupport"]),
        .library(name: "BleSim", targets: ["BleSim"]),
        .library(name: "BleDSL", targets: ["BleDSL"]),
        .library(name: "BleCore", targets: ["BleCore"]),
        .library(name: "BlueZVocabulary", targets: ["BlueZVocabulary"]),
        .executable(name: "blekit", targets: ["blekit"]),
        .executable(name: "blekit-integration", targets: ["blekit-integration"]),
    ],
    targets: [
        .systemLibrary(
            name: "CDBus",
            pkgConfig: "dbus-1",
            providers: [.apt(["libdbus-1-dev"])]
        ),
        .systemLibrary(
            name: "CGLib",
            pkgConfig: "glib-2.0",
            providers: [.apt(["libglib2.0-dev"])]
        ),
        // The GLib loop, its global actor, timers and executor: for layers that need the loop but not D-Bus.
        .target(name: "BleRuntime", dependencies: ["CGLib"]),
        .target(name: "BleDBus", dependencies: ["BleRuntime", "CDBus", "CGLib"]),
        // bluetoothd's D-Bus names, typed property keys, errors and object paths, shared by BleCore and BleSim.
        .target(name: "BlueZVocabulary", dependencies: ["BleDBus"]),
        .target(name: "BleSim", dependencies: ["BleDBus", "BlueZVocabulary"], exclude: ["README.md"]),
        .target(name: "BleDSL", dependencies: ["BleCore", "BleRuntime"]),
        // recvmmsg, which the Glibc module does not expose: a batch of notification records per system call.
        .target(name: "CSocketShim"),
        .target(name: "BleCore", dependencies: ["BleRuntime", "BleDBus", "BlueZVocabulary", "CSocketShim"]),
        .target(name: "BleTestSupport", dependencies: ["BleDBus", "BleSim", "BlueZVocabulary"]),
        .executableTarget(name: "blekit", dependencies: ["BleDBus", "BleSim", "BleTestSupport", "BleDSL", "DataLoggerExample"]),
        // Written like an FXBlueTooth app: Swift 5 language mode, no concurrency annotations.
        .target(name: "DataLoggerExample", dependencies: ["BleDSL"], path: "Examples/DataLogger",
                swiftSettings: [.swiftLanguageMode(.v5)]),
        // The Swift 6 command-line app template (docs/PORTING.md): a @MainActor delegate on queue .main, BleProgram.run.
        .executableTarget(name: "BleKitAppTemplate", dependencies: ["BleCore"], path: "Examples/Template"),
        // Scenarios written once and run against BleSim (make test) and the real bluetoothd (make test-bluez).
        .target(name: "BleIntegration", dependencies: ["BleCore", "BleDSL", "BleDBus", "BleSim", "BleTestSupport", "BlueZVocabulary"]),
        .executableTarget(name: "blekit-integration", dependencies: ["BleIntegration", "BleDBus"]),
        .executableTarget(name: "SimulatorBenchmark", dependencies: ["BleDBus", "BleSim", "BleTestSupport"],
                          path: "Benchmarks/SimulatorBenchmark"),
        // Spawning and reading the C baselines, shared by the benchmarks.
        .target(name: "BenchmarkSupport", path: "Benchmarks/Support"),
        .executableTarget(name: "RoundTripBenchmark", dependencies: ["BleCore", "BleDBus", "BleSim", "BleTestSupport", "BenchmarkSupport"],
                          path: "Benchmarks/RoundTripBenchmark"),
        .executableTarget(name: "BleDBusBenchmark", dependencies: ["BleDBus", "BleTestSupport", "BenchmarkSupport"],
                          path: "Benchmarks/BleDBusBenchmark"),
        .testTarget(name: "BleDBusTests", dependencies: ["BleDBus", "BleTestSupport"]),
        .testTarget(name: "BleDSLTests", dependencies: ["BleDSL", "BleCore", "BleSim", "BleTestSupport", "BleDBus"]),
        .testTarget(name: "BleSimTests", dependencies: ["BleDBus", "BleSim", "BleTestSupport"]),
        .testTarget(name: "BleIntegrationTests", dependencies: ["BleIntegration", "BleDBus"], exclude: ["Parity"]),
        .testTarget(name: "BlueZVocabularyTests", dependencies: ["BlueZVocabulary", "BleDBus"]),
        .testTarget(name: "DataLoggerExampleTests", dependencies: ["DataLoggerExample", "BleDSL", "BleSim", "BleTestSupport", "BleDBus"]),
        // FXBlueTooth's README example, unchanged but for its imports, in Swift 5 mode as iOS apps
        // are. Its one warning (an unused `[weak self]` in the README's startScan) is the README's
        // own and stays, so warnings are suppressed for this target only.
        .target(name: "FXBlueToothReadme", dependencies: ["BleDSL"], path: "Examples/FXBlueToothReadme",
                swiftSettings: [.swiftLanguageMode(.v5), .unsafeFlags(["-suppress-warnings"])]),
        .testTarget(name: "FXBlueToothReadmeTests", dependencies: ["FXBlueToothReadme", "BleDSL", "BleSim", "BleTestSupport", "BleDBus"],
                    swiftSettings: [.swiftLanguageMode(.v5)]),
        // Porting behaviours (issue 11): CoreBluetooth and FXBlueTooth shapes, deadlines, threads; runs the template.
        .testTarget(name: "PortingTests", dependencies: ["BleDSL", "BleCore", "BleSim", "BleTestSupport", "BleDBus"]),
        .testTarget(name: "BleCoreTests", dependencies: ["BleCore", "BleSim", "BleTestSupport", "BleDBus"]),
    ],
    swiftLanguageModes: [.v6]
)
