import Foundation

// Client CPU per write→notification round trip, and per ingested notification, through BleCore
// on BleSim, set against a libdbus C client (Benchmarks/c/ble_roundtrip.c) and bleak doing the
// same BlueZ exchanges, in one run. `run` starts a private bus and BleSim in this process and
// each client as a process of its own, in interleaved rounds; `client` is the BleCore client.

let arguments = CommandLine.arguments.dropFirst()

/// Prints a client's result line, or its failure, and exits accordingly.
func report(_ result: Result<String, ClientFailure>, _ what: String) -> Never {
    switch result {
    case .success(let line):
        print(line)
        exit(0)
    case .failure(let failure):
        FileHandle.standardError.write(Data("RoundTripBenchmark \(what) client: \(failure)\n".utf8))
        exit(1)
    }
}
switch arguments.first {
case "client":
    let rest = Array(arguments.dropFirst())
    guard rest.count == 3, let mode = ClientMode(rawValue: rest[0]), let count = Int(rest[1]), let warmup = Int(rest[2]), count > 0, warmup >= 0 else {
        FileHandle.standardError.write(Data("RoundTripBenchmark client: bad arguments\n\(RunOptions.usage)\n".utf8))
        exit(2)
    }
    let client = BleCoreClient(mode: mode, count: count, warmup: warmup)
    switch client.run(timeout: 120) {
    case .success(let line):
        print(line)
        exit(0)
    case .failure(let failure):
        FileHandle.standardError.write(Data("RoundTripBenchmark client (\(mode.rawValue)): \(failure)\n".utf8))
        exit(1)
    }
case "scan-client":
    let rest = Array(arguments.dropFirst())
    guard rest.count == 2, let expected = Int(rest[0]), let window = Double(rest[1]), expected > 0, window > 0 else {
        FileHandle.standardError.write(Data("RoundTripBenchmark scan-client: bad arguments\n\(RunOptions.usage)\n".utf8))
        exit(2)
    }
    report(ScanClient(expected: expected, window: window).run(timeout: 120), "scan")
case "role-server":
    let rest = Array(arguments.dropFirst())
    guard rest.count == 2, let burst = Int(rest[0]), let warmupBurst = Int(rest[1]), burst > 0, warmupBurst >= 0 else {
        FileHandle.standardError.write(Data("RoundTripBenchmark role-server: bad arguments\n\(RunOptions.usage)\n".utf8))
        exit(2)
    }
    RoleServer(burst: burst, warmupBurst: warmupBurst).run()
case "restart-client":
    report(RestartClient().run(timeout: 120), "restart")
case "memory-client":
    let rest = Array(arguments.dropFirst())
    guard rest.count == 2, let count = Int(rest[0]), let checkpoint = Int(rest[1]), count >= checkpoint, checkpoint > 0 else {
        FileHandle.standardError.write(Data("RoundTripBenchmark memory-client: bad arguments\n\(RunOptions.usage)\n".utf8))
        exit(2)
    }
    report(BleCoreClient(mode: .signal, count: count, warmup: 100, residentCheckpoints: [checkpoint, count]).run(timeout: 3600), "memory")
case "run", "serve":
    do {
        let options = try RunOptions(arguments.dropFirst())
        if arguments.first == "serve" {
            try await BenchmarkRun(options: options).serve()
        } else {
            print(try await BenchmarkRun(options: options).run())
        }
    } catch {
        FileHandle.standardError.write(Data("RoundTripBenchmark: \(error)\n".utf8))
        exit(1)
    }
default:
    FileHandle.standardError.write(Data("\(RunOptions.usage)\n".utf8))
    exit(2)
}
