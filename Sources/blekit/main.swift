import BleDBus
import BleSim
import BleTestSupport
import Foundation

/// `blekit`: BleKit's command-line tool.
enum Command {
    static let usage = """
    usage: blekit <command> [options]

    commands:
      sim [SCENARIO.json] [--address ADDRESS]
          Start a private dbus-daemon (or use --address) with BleSim serving the scenario,
          print the DBUS_SYSTEM_BUS_ADDRESS line to use, and run until interrupted.
      demo
          Run the BleKit demo against a real adapter, or against BleSim when there is none.
    """
}

@MainActor
func runSimulator(arguments: [String]) async -> Int32 {
    var scenarioPath: String?
    var explicitAddress: String?
    var index = 0
    while index < arguments.count {
        let argument = arguments[index]
        if argument == "--address", index + 1 < arguments.count {
            explicitAddress = arguments[index + 1]
            index += 2
            continue
        }
        if argument.hasPrefix("-") {
            FileHandle.standardError.write(Data("blekit sim: unknown option \(argument)\n\(Command.usage)\n".utf8))
            return 2
        }
        scenarioPath = argument
        index += 1
    }
    let scenario: Scenario
    do {
        scenario = try scenarioPath.map { path throws(Scenario.LoadError) in try Scenario.load(path: path) } ?? Scenario()
    } catch {
        FileHandle.standardError.write(Data("blekit sim: \(error)\n".utf8))
        return 1
    }
    var bus: PrivateBus?
    let address: String
    if let explicitAddress {
        address = explicitAddress
    } else {
        do {
            let started = try PrivateBus()
            bus = started
            address = started.address
        } catch {
            FileHandle.standardError.write(Data("blekit sim: \(error)\n".utf8))
            return 1
        }
    }
    let simulator = await scenario.makeSimulator()
    do {
        try await simulator.start(on: .address(address))
    } catch {
        FileHandle.standardError.write(Data("blekit sim: \(error)\n".utf8))
        bus?.stop()
        return 1
    }
    print("DBUS_SYSTEM_BUS_ADDRESS=\(address)")
    print("BleSim is serving \(scenario.peripherals.count) peripheral(s) on \(scenario.configuration.adapters.map(\.name).joined(separator: ", ")). Press Ctrl-C to stop.")
    fflush(nil)
    await waitForTermination()
    await simulator.stop(.clean)
    bus?.stop()
    return 0
}

/// Waits for SIGINT or SIGTERM (or stdin closing when it is a pipe, so a parent can stop us).
@MainActor
func waitForTermination() async {
    signal(SIGINT, SIG_IGN)
    signal(SIGTERM, SIG_IGN)
    let (stream, continuation) = AsyncStream<Void>.makeStream()
    let interrupt = DispatchSource.makeSignalSource(signal: SIGINT, queue: .main)
    let terminate = DispatchSource.makeSignalSource(signal: SIGTERM, queue: .main)
    interrupt.setEventHandler { continuation.yield() }
    terminate.setEventHandler { continuation.yield() }
    interrupt.resume()
    terminate.resume()
    for await _ in stream { break }
    interrupt.cancel()
    terminate.cancel()
}

let arguments = Array(CommandLine.arguments.dropFirst())
let status: Int32
switch arguments.first {
case "sim":
    status = await runSimulator(arguments: Array(arguments.dropFirst()))
case "demo":
    status = await runDemo(arguments: Array(arguments.dropFirst()))
case "-h", "--help", "help":
    print(Command.usage)
    status = 0
default:
    FileHandle.standardError.write(Data("\(Command.usage)\n".utf8))
    status = 2
}
exit(status)
