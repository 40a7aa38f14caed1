import BleCore
import BleDBus
import BleSim
import Foundation

/// `blekit demo`: the DataLogger walk-through (Examples/DataLogger) — against a real powered
/// adapter's room when there is one, else against BleSim on a private bus with the shipped
/// `Scenarios/multi-packet.json` device.
enum DemoCommand: BlekitCommand {
    static let name = "demo"
    static let synopsis = ""
    static let summary = "the BleKit demo: a real adapter's room, or BleSim when there is none"
    static let options: [OptionSpec] = []

    @MainActor
    static func run(_ invocation: Invocation) async -> ExitCode {
        ExitCode(rawValue: await runDemo()) ?? .failure
    }
}

func runDemo() async -> Int32 {
    if let adapter = await RealAdapterProbe.poweredAdapter() {
        print("A real powered Bluetooth adapter is present (\(adapter)): scanning the real room for 10 s.")
        if let failure = await RealRoomScan.run(seconds: 10) {
            FileHandle.standardError.write(Data("blekit demo: the scan failed: \(failure)\n".utf8))
            return ExitCode.failure.rawValue
        }
        return 0
    }
    print("No powered Bluetooth adapter on the system bus: using BleSim, BleKit's virtual BlueZ.")
    do {
        let bus = try await PrivateBus.start()
        defer { bus.stop() }
        let scenario = try loadScenario()
        let simulator = await scenario.makeSimulator()
        try await simulator.start(on: bus.busAddress)
        let beacons = scenario.peripherals.filter { $0.name?.hasPrefix("beacon-") == true }
        let devices = scenario.peripherals.filter { $0.name?.hasPrefix("beacon-") != true }
        print("BleSim serves \(devices.map { $0.name ?? $0.address }.joined(separator: ", ")) among \(beacons.count) beacons (a crowded room) on a private bus")
        print("")
        print("Part 1: both roles, as two processes — the LED peripheral on hci0, the LED central on hci1 (Examples/LEDControl)")
        let rolesPassed = await TwoRoleDemo.run(busAddress: bus.address)
        print("")
        print("Part 2: the DeviceManager flow of FXBlueTooth's README (Examples/DataLogger): scan the crowded room, filter, connect, commands, a task, link loss, reconnect")
        let flowPassed = await DeviceManagerFlow.run(busAddress: bus.address)
        await simulator.stop(.clean)
        print("")
        print("demo \(rolesPassed && flowPassed ? "passed" : "FAILED"): two roles \(rolesPassed ? "passed" : "FAILED"), DeviceManager flow \(flowPassed ? "passed" : "FAILED")")
        if !rolesPassed { FileHandle.standardError.write(Data("blekit demo: the two-role LED part failed (see its transcript above)\n".utf8)) }
        return rolesPassed && flowPassed ? 0 : 1
    } catch {
        FileHandle.standardError.write(Data("blekit demo: \(error)\n".utf8))
        return 1
    }
}

/// 200 beacons advertising around the demo's device.
private var crowd: [String: Any] { ["count": 200, "addressPrefix": "DE:AD:BE:EF", "namePrefix": "beacon-", "interval": 200, "rssi": -75, "rssiJitter": 8] }

private func loadScenario() throws -> Scenario {
    let shipped = "Scenarios/multi-packet.json"
    if let data = FileManager.default.contents(atPath: shipped),
       var object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] {
        // The DeviceManager flow finds its device in a crowded room.
        if object["crowd"] == nil { object["crowd"] = crowd }
        return try Scenario.parse(try JSONSerialization.data(withJSONObject: object), name: shipped)
    }
    // Run from elsewhere: the same device, built in.
    let json = #"{"crowd": {"count": 200, "addressPrefix": "DE:AD:BE:EF", "namePrefix": "beacon-", "interval": 200, "rssi": -75, "rssiJitter": 8}, "peripherals": [{"address": "C0:FF:EE:00:00:03", "name": "DataLogger", "mtu": 185, "services": [{"uuid": "6e400001-b5a3-f393-e0a9-e50e24dcca9e", "characteristics": [{"uuid": "6e400002-b5a3-f393-e0a9-e50e24dcca9e", "flags": ["write", "write-without-response"]}, {"uuid": "6e400003-b5a3-f393-e0a9-e50e24dcca9e", "flags": ["notify"]}]}], "rules": [{"on": {"write": "6e400002-b5a3-f393-e0a9-e50e24dcca9e", "prefix": "01"}, "then": [{"notify": "6e400003-b5a3-f393-e0a9-e50e24dcca9e", "value": "aa0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f55", "packets": 4}]}, {"on": {"write": "6e400002-b5a3-f393-e0a9-e50e24dcca9e", "prefix": "02"}, "then": [{"echo": "6e400003-b5a3-f393-e0a9-e50e24dcca9e"}]}, {"on": {"write": "6e400002-b5a3-f393-e0a9-e50e24dcca9e", "prefix": "ff"}, "then": [{"disconnect": true}]}]}]}"#
    return try Scenario.parse(Data(json.utf8), name: "built-in data logger")
}

/// `blekit demo`'s second part: Examples/DataLoggerDemo, the DataLogger walk-through as a
/// program, its transcript printed as it comes.
enum DeviceManagerFlow {
    /// True when the walk-through ended with every step passed.
    static func run(busAddress: String) async -> Bool {
        guard let executable = DemoPrograms.path(of: "DataLoggerDemo") else { return false }
        do {
            // Its verdict line goes to our standard error when a step failed.
            let child = try ChildProcess(arguments: [executable, "--bus", busAddress], standardErrorPath: nil)
            return await DemoPrograms.relay(child, nil) == 0
        } catch {
            FileHandle.standardError.write(Data("blekit demo: could not start DataLoggerDemo: \(error)\n".utf8))
            return false
        }
    }
}

/// Is there a real bluetoothd with a powered adapter on the system bus?
enum RealAdapterProbe {
    static func poweredAdapter() async -> String? {
        // No system bus at all (containers, CI): nothing to probe, and nothing to log about.
        let environment = ProcessInfo.processInfo.environment["DBUS_SYSTEM_BUS_ADDRESS"] ?? ""
        if environment.isEmpty && !FileManager.default.fileExists(atPath: "/var/run/dbus/system_bus_socket") { return nil }
        let probe = StateProbe()
        let central = CentralManager(delegate: probe, queue: nil, options: CentralManagerOptions(bus: .system))
        defer { central.close() }
        let deadline = Date().addingTimeInterval(2)
        while Date() < deadline {
            let state = central.state
            if state == .poweredOn { return central.adapterName ?? "adapter" }
            if state == .unsupported || state == .unauthorized || state == .poweredOff { return nil }
            await probe.changed()
        }
        return nil
    }

    final class StateProbe: CentralManagerDelegate, @unchecked Sendable {
        private let stream = AsyncStream<Void>.makeStream()
        func centralManagerDidUpdateState(_ central: CentralManager) { stream.continuation.yield() }
        func changed() async {
            let waiter = Task { for await _ in stream.stream { break } }
            let timeout = Task { try? await Task.sleep(for: .milliseconds(200)); waiter.cancel() }
            _ = await waiter.value
            timeout.cancel()
        }
    }
}

/// Lists what the real adapter hears.
enum RealRoomScan {
    /// Scans for `seconds`; returns why the scan failed, if it did (else "heard 0" would look
    /// like an empty room).
    static func run(seconds: Double) async -> String? {
        final class Listener: CentralManagerDelegate, @unchecked Sendable {
            var seen = Set<String>()
            var failure: String?
            func centralManager(_ central: CentralManager, didDiscover peripheral: Peripheral, advertisementData: AdvertisementData, rssi RSSI: Int) {
                guard seen.insert(peripheral.address).inserted else { return }
                print("  \(peripheral.address)  \(RSSI) dBm  \(advertisementData.localName ?? "")")
            }
            func centralManager(_ central: CentralManager, didFailToScan error: Error) {
                failure = (error as? BleError)?.description ?? "\(error)"
            }
        }
        let listener = Listener()
        let central = CentralManager(delegate: listener, queue: nil, options: CentralManagerOptions(bus: .system))
        central.scanForPeripherals(withServices: nil, options: ScanOptions())
        try? await Task.sleep(for: .seconds(seconds))
        central.stopScan()
        central.close()
        print("heard \(listener.seen.count) device(s)")
        return listener.failure
    }
}
