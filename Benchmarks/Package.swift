// swift-tools-version:6.0
import PackageDescription

// BleKit's benchmarks (make bench, Benchmarks/run, Benchmarks/roundtrip, Benchmarks/gateway/run,
// make bench-stall): a package beside the library, as swift-nio's are, so that what users depend on
// does not carry them. They use the library's public products only; the scripts build them in
// release mode with --package-path Benchmarks.
let package = Package(
    name: "BleKitBenchmarks",
    dependencies: [
        // The library, by path; named, because a path dependency's identity is its folder's name.
        // Its `blekit` product is built from here too (Benchmarks/gateway/run), into the same folder.
        .package(name: "BleKit", path: ".."),
    ],
    targets: [
        // Spawning and reading the C baselines, shared by the benchmarks.
        .target(name: "BenchmarkSupport", path: "Support"),
        // BleSim: 1,000 advertisers at 100 ms on one core.
        .executableTarget(name: "SimulatorBenchmark",
                          dependencies: [.product(name: "BleDBus", package: "BleKit"), .product(name: "BleSim", package: "BleKit"),
                                         .product(name: "BlueZVocabulary", package: "BleKit"), .product(name: "BleTestSupport", package: "BleKit")],
                          path: "SimulatorBenchmark"),
        // BleDBus calls and decoding against libdbus C (Benchmarks/c/dbus_ping.c).
        .executableTarget(name: "BleDBusBenchmark",
                          dependencies: [.product(name: "BleDBus", package: "BleKit"), .product(name: "BlueZVocabulary", package: "BleKit"),
                                         .product(name: "BleTestSupport", package: "BleKit"), "BenchmarkSupport"],
                          path: "BleDBusBenchmark"),
        // Round trips, ingest, multi-packet responses, restarts, memory and scanning through BleCore
        // and BleDSL against libdbus C (Benchmarks/c/ble_roundtrip.c) and bleak.
        .executableTarget(name: "RoundTripBenchmark",
                          dependencies: [.product(name: "BleCore", package: "BleKit"), .product(name: "BleDSL", package: "BleKit"),
                                         .product(name: "BleDBus", package: "BleKit"), .product(name: "BleSim", package: "BleKit"),
                                         .product(name: "BlueZVocabulary", package: "BleKit"), .product(name: "BleTestSupport", package: "BleKit"),
                                         "BenchmarkSupport"],
                          path: "RoundTripBenchmark"),
        // Issue 16: how long a hostile org.bluez can block the loop (make bench-stall).
        .executableTarget(name: "LoopStallBenchmark",
                          dependencies: [.product(name: "BleCore", package: "BleKit"), .product(name: "BleDBus", package: "BleKit"),
                                         .product(name: "BlueZVocabulary", package: "BleKit"), .product(name: "BleTestSupport", package: "BleKit")],
                          path: "LoopStallBenchmark"),
        // blekit gateway beside theengsgateway (Benchmarks/gateway/run).
        .executableTarget(name: "GatewayBenchmark",
                          dependencies: [.product(name: "BleGateway", package: "BleKit"), .product(name: "BleCore", package: "BleKit"),
                                         .product(name: "BleSim", package: "BleKit"), .product(name: "BleTestSupport", package: "BleKit"),
                                         .product(name: "BleDBus", package: "BleKit"), "BenchmarkSupport"],
                          path: "GatewayBenchmark"),
    ],
    swiftLanguageModes: [.v6]
)
