import BleCore
import BleDBus
import BleTestSupport
import Foundation
import BlueZVocabulary

// How long a hostile org.bluez can block BleKit's loop: a 1 ms ticker on the loop records the
// longest gap between ticks, first while idle (the baseline of this machine, this run), then
// while a fake bluetoothd (this program with --fake, a child process) answers GetManagedObjects
// with 5,000 devices (1 KB of manufacturer data each) and floods 20,000 signals, a third of
// them malformed, while BleKit scans. The verdict bounds the
// longest stall during the flood (default 250 ms, --bound MS) and prints it against the idle
// baseline. Not a test: speed is never asserted in tests.

let bound = CommandLine.arguments.firstIndex(of: "--bound").flatMap { Int(CommandLine.arguments[$0 + 1]) } ?? 250
// The machine is shared: other processes can only lengthen a stall, never shorten it, so the
// verdict takes the shortest of several runs (--runs N, default 3). A stall BleKit causes is in
// every run; one a busy neighbour causes is not.
let runs = max(1, CommandLine.arguments.firstIndex(of: "--runs").flatMap { Int(CommandLine.arguments[$0 + 1]) } ?? 3)

@BleLoop final class StallMeter {
    var last = ContinuousClock.now
    var longest = Duration.zero
    var timer: LoopTimer?
    func start() {
        last = .now
        longest = .zero
        timer = LoopTimer.scheduled(after: .milliseconds(1), repeating: .milliseconds(1)) { [weak self] in
            guard let self else { return }
            let now = ContinuousClock.now
            self.longest = max(self.longest, now - self.last)
            self.last = now
        }
    }
    func stop() -> Duration { timer?.cancel(); return longest }
}

final class Quiet: CentralManagerDelegate, @unchecked Sendable {
    func centralManagerDidUpdateState(_ central: CentralManager) {}
}

/// The fake bluetoothd, in its own process so that its work never counts as BleKit's: it owns
/// org.bluez, answers GetManagedObjects with the big tree, and floods once scanning starts.
@BleLoop func serveFake(on address: String) async throws -> Int32 {
    let fake = try await Connection.open(.address(address))
    let entry = { (path: String, interfaces: [(String, [(String, DBusValue)])]) -> DBusDictionaryEntry in
        DBusDictionaryEntry(key: .objectPath(ObjectPath(stringLiteral: path)), value: .dictionary(key: .string, value: .dictionary(key: .string, value: .variant),
            interfaces.map { DBusDictionaryEntry(key: .string($0.0), value: BlueZShapes.propertyDictionary($0.1)) }))
    }
    var objects = [entry("/org/bluez/hci0", [("org.bluez.Adapter1", [("Address", .string("00:AA:01:00:00:00")), ("Powered", .boolean(true))])])]
    for index in 0..<5_000 {
        let device = String(format: "C0:FF:EE:00:%02X:%02X", index >> 8, index & 0xff)
        objects.append(entry("/org/bluez/hci0/dev_" + device.replacingOccurrences(of: ":", with: "_"), [("org.bluez.Device1", [
            ("Address", .string(device)), ("Adapter", .objectPath("/org/bluez/hci0")), ("RSSI", .int16(-60)),
            ("ManufacturerData", BlueZShapes.manufacturerDataValue([0x004c: Data(count: 1024)])),
        ])]))
    }
    let tree = DBusValue.dictionary(key: .objectPath, value: .dictionary(key: .string, value: .dictionary(key: .string, value: .variant)), objects)
    let (started, scanning) = AsyncStream<Void>.makeStream()
    fake.objects.callFilter = { call in
        switch call.member {
        case "GetManagedObjects": call.reply([tree])
        case "StartDiscovery": call.reply(); scanning.yield()
        default: call.reply()
        }
        return true
    }
    _ = try await fake.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                            member: "RequestName", arguments: [.string("org.bluez"), .uint32(0)])
    FileHandle.standardOutput.write(Data("ready\n".utf8))
    var iterator = started.makeAsyncIterator()
    _ = await iterator.next()
    for index in 0..<20_000 {
        let device = ObjectPath(stringLiteral: String(format: "/org/bluez/hci0/dev_C0_FF_EE_00_%02X_%02X", (index % 5_000) >> 8, index & 0xff))
        let body: [DBusValue] = index % 3 == 0 ? [.uint32(1)]
            : [.string("org.bluez.Device1"), BlueZShapes.propertyDictionary([("RSSI", .int16(-50))]), .array(element: .string, [])]
        try fake.emitSignal(path: device, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged", body: body)
    }
    _ = try await fake.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus", member: "GetId")
    try await Task.sleep(for: .seconds(60))
    return 0
}

/// One measurement: the longest stall while idle and during the flood, in milliseconds.
@BleLoop func measure() async throws -> (idle: Double, flood: Double)? {
    let bus = try await PrivateBus.start()
    defer { bus.stopInBackground() }
    guard case .address(let address) = bus.busAddress else { return nil }
    let child = Process()
    child.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
    child.arguments = ["--fake", address]
    let output = Pipe()
    child.standardOutput = output
    try child.run()
    defer { child.terminate() }
    // Wait for "ready" off the loop.
    let ready = await Task.detached { output.fileHandleForReading.availableData }.value
    guard String(decoding: ready, as: UTF8.self).contains("ready") else { return nil }
    let meter = StallMeter()
    // Idle baseline.
    meter.start()
    try await Task.sleep(for: .milliseconds(500))
    let idle = meter.stop()
    // The flood: the central loads the big tree, starts scanning, and the fake floods.
    meter.start()
    let delegate = Quiet()
    let central = CentralManager(delegate: delegate, queue: nil, options: CentralManagerOptions(bus: .address(address)))
    central.scanForPeripherals(withServices: nil)
    try await Task.sleep(for: .seconds(10))
    let flooded = meter.stop()
    central.close()
    let idleMs = Double(idle.components.attoseconds) / 1e15 + Double(idle.components.seconds) * 1000
    let floodMs = Double(flooded.components.attoseconds) / 1e15 + Double(flooded.components.seconds) * 1000
    print(String(format: "loop stall: idle longest %.1f ms; under a hostile flood longest %.1f ms (%.1f× idle)",
                 idleMs, floodMs, floodMs / max(idleMs, 0.001)))
    return (idleMs, floodMs)
}

@BleLoop func run() async throws -> Int32 {
    var floods: [Double] = []
    for _ in 0..<runs {
        guard let measured = try await measure() else { print("verdict: FAIL (the fake did not start)"); return 1 }
        floods.append(measured.flood)
    }
    let floodMs = floods.min() ?? .infinity
    print(String(format: "loop stall under the flood: shortest of %d runs %.1f ms (longest %.1f ms); bound %d ms",
                 runs, floodMs, floods.max() ?? 0, bound))
    let passed = floodMs <= Double(bound)
    print(passed ? "verdict: PASS" : "verdict: FAIL (the loop was blocked longer than the bound)")
    return passed ? 0 : 1
}

let fakeAddress = CommandLine.arguments.firstIndex(of: "--fake").map { CommandLine.arguments[$0 + 1] }
let status = Task { @BleLoop in
    do {
        if let fakeAddress { return try await serveFake(on: fakeAddress) }
        return try await run()
    } catch {
        print("verdict: FAIL (\(error))")
        return Int32(1)
    }
}
let result = await status.value
exit(result)
