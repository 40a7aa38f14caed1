import BleSim
import Foundation
import Testing

/// Every command's exit status and output say what happened: a write BleKit refused or the
/// device refused fails with the typed error, names and identifiers keep finding a device after
/// it was connected, shortfalls against --count fail, and `sim` prints where it serves.
@Suite(.serialized) struct TruthfulExitTests {
    static let address = "C0:FF:EE:00:00:05"
    static let room = #"""
    {"timing": {"scale": 0.2}, "peripherals": [
      {"address": "C0:FF:EE:00:00:05", "name": "MyDevice", "gapName": "Acme Sensor", "rssi": -45, "serviceUUIDs": ["ff00"],
       "services": [
         {"uuid": "ff00", "characteristics": [
           {"uuid": "ff01", "flags": ["read", "write", "write-without-response"], "value": "00"},
           {"uuid": "ff03", "flags": ["read", "write"], "value": "00"},
           {"uuid": "ff02", "flags": ["read", "notify"], "value": "00"}]},
         {"uuid": "180f", "characteristics": [{"uuid": "2a19", "flags": ["read"], "value": "5a"}]}],
       "rules": [{"on": {"write": "ff03"}, "then": [{"attError": 19}]}]}
    ]}
    """#

    static func full(_ short: String) -> String { "0000\(short)-0000-1000-8000-00805f9b34fb" }

    @Test func aWriteWithoutResponseLongerThanTheLinkCarriesFailsAndSendsNothing() async throws {
        let room = try await SimulatedRoom.start(Self.room)
        defer { Task { await room.stop() } }
        let long = String(repeating: "ab", count: 600)
        let run = try await room.blekit(["write", Self.address, "ff01", long, "--without-response"])
        #expect(run.status == 1, "\(run.transcript)")
        #expect(run.errors.contains("blekit write: writing FF01 failed: The value is 600 bytes") && run.errors.contains("nothing was sent"), "\(run.transcript)")
        #expect(!run.output.contains("wrote"), "no success line for a write that was not sent: \(run.transcript)")
        let json = try await room.blekit(["write", Self.address, "ff01", long, "--without-response", "--json"])
        #expect(json.status == 1 && json.output.isEmpty && json.errors.contains("600 bytes"), "\(json.transcript)")
        let readBack = try await room.blekit(["read", Self.address, "ff01"])
        #expect(readBack.output.contains("FF01: 00"), "the device got nothing: \(readBack.transcript)")
    }

    @Test func aWriteWithoutResponseBluetoothdRefusesFails() async throws {
        let room = try await SimulatedRoom.start(Self.room)
        defer { Task { await room.stop() } }
        // Without AcquireWrite BleKit sends `command` WriteValue calls; bluetoothd's refusal of
        // one arrives after BleKit queued the write, as a late error.
        await room.simulator.faults.failCall("AcquireWrite", name: "org.bluez.Error.NotSupported", message: "Not supported", times: nil)
        await room.simulator.faults.failCall("WriteValue", name: "org.bluez.Error.Failed", message: "Operation failed", times: 1)
        let refused = try await room.blekit(["write", Self.address, "ff01", "07", "--without-response"])
        #expect(refused.status == 1 && refused.errors.contains("blekit write: writing FF01 failed"), "\(refused.transcript)")
        #expect(!refused.output.contains("wrote"), "\(refused.transcript)")
        let sent = try await room.blekit(["write", Self.address, "ff01", "08", "--without-response"])
        #expect(sent.status == 0 && sent.output.contains("wrote 1 byte(s) to FF01 without response (handed to BlueZ"), "\(sent.transcript)")
    }

    @Test func aWriteTheDeviceRefusesFailsWithTheATTError() async throws {
        let room = try await SimulatedRoom.start(Self.room)
        defer { Task { await room.stop() } }
        // A scenario rule's attError (BleSim answers the Write Request with it).
        let ruled = try await room.blekit(["write", Self.address, "ff03", "01"])
        #expect(ruled.status == 1 && ruled.errors.contains("writing FF03 failed") && ruled.errors.contains("ATT error: ATT error 0x13"), "\(ruled.transcript)")
        #expect(!ruled.output.contains("acknowledged"), "\(ruled.transcript)")
        // An injected one, on a characteristic that otherwise accepts the write.
        await room.simulator.faults.injectAttError(Self.address, characteristic: Self.full("ff01"), operation: .write, error: .writeNotPermitted)
        let injected = try await room.blekit(["write", Self.address, "ff01", "02"])
        #expect(injected.status == 1 && injected.errors.contains("writing FF01 failed") && injected.errors.contains("ATT error: write not permitted (0x03)"), "\(injected.transcript)")
        let readBack = try await room.blekit(["read", Self.address, "ff03"])
        #expect(readBack.output.contains("FF03: 00"), "a refused write stores nothing: \(readBack.transcript)")
    }

    @Test func namesAndIdentifiersKeepResolvingAcrossConnects() async throws {
        let room = try await SimulatedRoom.start(Self.room)
        defer { Task { await room.stop() } }
        let environment = CLIRun.freshEnvironment()
        let scan = try await room.blekit(["scan", "--json", "--count", "1", "--timeout", "30"], environment: environment)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(scan.output.utf8)) as? [String: Any], "\(scan.transcript)")
        let identifier = try #require((object["identifier"] as? String).flatMap(UUID.init(uuidString:)), "scan --json prints the identifier: \(scan.transcript)")
        #expect(object["name"] as? String == "MyDevice", "\(scan.transcript)")
        for round in 1...2 {
            // After the first connection bluetoothd calls it by its GAP name, Acme Sensor.
            let byName = try await room.blekit(["read", "MyDevice", "2a19"], environment: environment)
            #expect(byName.status == 0 && byName.output.contains("2A19 Battery Level: 5a"), "read by the advertised name, round \(round): \(byName.transcript)")
        }
        let byGapName = try await room.blekit(["read", "Acme Sensor", "2a19"], environment: environment)
        #expect(byGapName.status == 0, "\(byGapName.transcript)")
        let byIdentifier = try await room.blekit(["read", identifier.uuidString, "2a19"], environment: environment)
        #expect(byIdentifier.status == 0 && byIdentifier.output.contains("5a"), "\(byIdentifier.transcript)")
        let info = try await room.blekit(["info", identifier.uuidString.lowercased()], environment: environment)
        #expect(info.status == 0 && info.output.contains("Identifier: \(identifier.uuidString)"), "\(info.transcript)")

        // bluetoothd 5.66 takes a complete advertised name back at the next advertisement, so a
        // blekit that remembers nothing finds the device by it too once it hears it.
        let fresh = try await room.blekit(["read", "MyDevice", "2a19"], environment: CLIRun.freshEnvironment())
        #expect(fresh.status == 0 && fresh.output.contains("5a"), "\(fresh.transcript)")
        let unknown = try await room.blekit(["read", "Nobody", "2a19", "--timeout", "1"], environment: environment)
        #expect(unknown.status == 6 && unknown.errors.contains("blekit read: Nobody was not found within 1 s"), "\(unknown.transcript)")
    }

    @Test func aDeviceAnotherProgramHoldsIsFoundWithoutAdvertising() async throws {
        let room = try await SimulatedRoom.start(Self.room)
        defer { Task { await room.stop() } }
        let environment = CLIRun.freshEnvironment()
        let holder = try RunningCLI(["notify", "MyDevice", "ff02", "--bus", room.bus.address], environment: environment)
        #expect(await holder.line()?.contains("notifications from FF02") == true)
        // Connected peripherals usually stop advertising; BlueZ shares the link with every client.
        await room.simulator.peripheral(Self.address)?.stopAdvertising()
        for target in ["MyDevice", "Acme Sensor", Self.address] {
            let read = try await room.blekit(["read", target, "2a19", "--timeout", "2"], environment: environment)
            #expect(read.status == 0 && read.output.contains("5a"), "\(target): \(read.transcript)")
        }
        let held = await holder.stop(with: SIGINT)
        #expect(held.status == 0 && held.output.contains("interrupted"), "the readers left the holder's link alone: \(held.transcript)")
    }

    @Test func gatewayStartUpErrorsEndItWithTheirStatus() async throws {
        let broker = ["--broker", "127.0.0.1:1"]
        let off = try await SimulatedRoom.start(#"{"adapters": [{"name": "hci0", "address": "00:AA:01:00:00:00", "powered": false}], "peripherals": []}"#)
        let poweredOff = try await off.blekit(["gateway", "--timeout", "30"] + broker)
        await off.stop()
        #expect(poweredOff.status == 4 && poweredOff.errors.contains("blekit gateway: the adapter hci0 is powered off"), "\(poweredOff.transcript)")
        #expect(!poweredOff.output.contains("publishing"), "\(poweredOff.transcript)")
        let none = try await SimulatedRoom.start(#"{"adapters": [], "peripherals": []}"#)
        let noAdapter = try await none.blekit(["gateway", "--timeout", "30"] + broker)
        await none.stop()
        #expect(noAdapter.status == 3 && noAdapter.errors.contains("there is no Bluetooth adapter"), "\(noAdapter.transcript)")
        // Bluetooth is fine but nothing answers at the broker's address: said when it stops.
        let room = try await SimulatedRoom.start(Self.room)
        let unreachable = try await room.blekit(["gateway", "--timeout", "1"] + broker)
        await room.stop()
        #expect(unreachable.status == 1 && unreachable.errors.contains("never reached the broker at 127.0.0.1:1"), "\(unreachable.transcript)")
    }

    @Test func simPrintsTheBusTheAdaptersAndThePeripherals() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("blekit-sim-\(UUID().uuidString).json")
        try Data(Self.room.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let sim = try RunningCLI(["sim", file.path])
        var lines: [String] = []
        while lines.last?.contains("Press Ctrl-C") != true, let line = await sim.line() { lines.append(line) }
        let bus = try #require(lines.first?.split(separator: "=", maxSplits: 1).last.map(String.init), "\(lines)")
        #expect(lines.first?.hasPrefix("DBUS_SYSTEM_BUS_ADDRESS=unix:") == true, "\(lines)")
        #expect(lines.contains("adapter hci0 00:AA:01:00:00:00") && lines.contains("adapter hci1 00:AA:01:00:00:01"), "\(lines)")
        #expect(lines.contains("peripheral \(Self.address) MyDevice"), "\(lines)")
        #expect(lines.last?.contains("Point clients at it with --bus \(bus)") == true, "\(lines)")
        // The printed address is where the simulator is.
        let scan = try await CLIRun.run(["scan", "--count", "1", "--timeout", "30", "--bus", bus])
        #expect(scan.status == 0 && scan.output.contains(Self.address), "\(scan.transcript)")
        let stopped = await sim.stop(with: SIGINT)
        #expect(stopped.status == 0, "\(stopped.transcript)")
    }

    @Test func gattValuesThatCannotBeReadFailOnStandardError() async throws {
        let room = try await SimulatedRoom.start(Self.room)
        defer { Task { await room.stop() } }
        await room.simulator.faults.injectAttError(Self.address, characteristic: Self.full("2a19"), operation: .read, error: .readNotPermitted, times: nil)
        let run = try await room.blekit(["gatt", Self.address, "--values"])
        #expect(run.status == 1, "\(run.transcript)")
        #expect(run.output.contains("characteristic 2A19 Battery Level [read] = (read failed:") && run.output.contains("1 read(s) failed"), "\(run.transcript)")
        #expect(run.errors.contains("blekit gatt: reading Battery Level failed: The peripheral answered with an ATT error: read not permitted (0x02)"), "\(run.transcript)")
        let json = try await room.blekit(["gatt", Self.address, "--values", "--json"])
        #expect(json.status == 1 && json.errors.contains("reading Battery Level failed"), "--json failures reach standard error too: \(json.transcript)")
    }

    @Test func countsNotReachedByTheDeadlineFail() async throws {
        let room = try await SimulatedRoom.start(Self.room)
        defer { Task { await room.stop() } }
        // ff02 notifies only when something writes ff01 (nothing does here).
        let notify = try await room.blekit(["notify", Self.address, "ff02", "--count", "3", "--duration", "0.5"])
        #expect(notify.status == 7 && notify.errors.contains("only 0 of 3 notification(s) came within --duration 0.5 s"), "\(notify.transcript)")
        let enough = try await room.blekit(["notify", Self.address, "ff02", "--duration", "0.5"])
        #expect(enough.status == 0 && enough.output.contains("0 notification(s), 0.5 s passed"), "a duration alone is a plain stop: \(enough.transcript)")
        let scan = try await room.blekit(["scan", "--count", "2", "--timeout", "1"])
        #expect(scan.status == 6 && scan.errors.contains("only 1 of 2 device(s) heard within 1 s"), "\(scan.transcript)")
    }

    /// `scan --count -1` stopped at the first device and said "stopped after -1 device(s)";
    /// `notify --count 0` exited at once with status 0. Counts and rows below 1 are refused
    /// before the bus is tried (a number let through would end with status 3 here).
    @Test func countsAndLimitsBelowOneAreUsageErrors() async throws {
        let nowhere = ["--bus", "unix:path=/nonexistent/blekit-count.sock"]
        for (arguments, message) in [
            (["scan", "--count", "-1"], "--count wants a whole number 1 or more, not '-1'"),
            (["scan", "--count", "0"], "--count wants a whole number 1 or more, not '0'"),
            (["scan", "--limit", "-4"], "--limit wants a whole number 1 or more, not '-4'"),
            (["notify", Self.address, "ff02", "--count", "0", "--duration", "1"], "--count wants a whole number 1 or more, not '0'"),
        ] {
            let run = try await CLIRun.run(arguments + nowhere)
            #expect(run.status == 2 && run.errors.contains(message), "\(arguments): \(run.transcript)")
        }
    }

    /// The README calls --bus, --adapter and --json global, and `blekit --bus ADDRESS scan`
    /// was refused as "unknown command '--bus'": before the command they are taken as after it.
    @Test func globalOptionsMayComeBeforeTheCommand() async throws {
        let room = try await SimulatedRoom.start(Self.room)
        defer { Task { await room.stop() } }
        let scan = try await CLIRun.run(["--bus", room.bus.address, "--json", "scan", "--count", "1", "--timeout", "30"])
        #expect(scan.status == 0 && scan.output.contains("\"address\":\"\(Self.address)\""), "\(scan.transcript)")
        let inline = try await CLIRun.run(["--bus=\(room.bus.address)", "--adapter", "hci1", "read", Self.address, "2a19"])
        #expect(inline.status == 0 && inline.output.contains("2A19 Battery Level: 5a"), "\(inline.transcript)")
        let alone = try await CLIRun.run(["--bus", room.bus.address])
        #expect(alone.status == 2 && alone.errors.contains("--bus is a global option; a command must follow"), "\(alone.transcript)")
    }

    /// BlueZ 5.66 does not say whether an advertisement was connectable, and `info` printed
    /// "Connectable: yes" for a crowd's non-connectable beacon.
    @Test func infoDoesNotClaimABeaconIsConnectable() async throws {
        let room = try await SimulatedRoom.start(#"{"timing": {"scale": 0.2}, "crowd": {"count": 1, "addressPrefix": "DE:AD:BE:EF", "interval": 50}}"#)
        defer { Task { await room.stop() } }
        let info = try await room.blekit(["info", "DE:AD:BE:EF:00:00"])
        #expect(info.status == 0 && info.output.contains("Connectable: not reported by BlueZ"), "\(info.transcript)")
        #expect(!info.output.contains("Connectable: yes"), "\(info.transcript)")
        let json = try await room.blekit(["info", "DE:AD:BE:EF:00:00", "--json"])
        #expect(json.status == 0 && !json.output.contains("\"connectable\":true"), "\(json.transcript)")
    }

    /// A name of the wrong kind as the example, a misspelt --peripheral without the names
    /// there are, and malformed JSON without the parser's words sent people looking.
    @Test func refusedInputsSayWhatWouldBeAccepted() async throws {
        let service = try await CLIRun.run(["scan", "--service", "Heart Rat", "--bus", "unix:path=/nonexistent/blekit-names.sock"])
        #expect(service.status == 2 && service.errors.contains("nor the name of a service (\"Heart Rate\", \"Battery\")"), "\(service.transcript)")
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("blekit-serve-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let scenario = folder.appendingPathComponent("room.json").path
        try Data(Self.room.utf8).write(to: URL(fileURLWithPath: scenario))
        let misspelt = try await CLIRun.run(["serve", scenario, "--peripheral", "MyDevise", "--bus", "unix:path=/nonexistent/blekit-serve.sock"])
        #expect(misspelt.status == 1 && misspelt.errors.contains("has no peripheral named 'MyDevise'; its peripherals are named 'MyDevice'"), "\(misspelt.transcript)")
        let broken = folder.appendingPathComponent("broken.json").path
        try Data(#"{"name": "X","#.utf8).write(to: URL(fileURLWithPath: broken))
        let malformed = try await CLIRun.run(["serve", broken, "--bus", "unix:path=/nonexistent/blekit-serve.sock"])
        #expect(malformed.status == 1 && malformed.errors.contains("broken.json is not valid JSON: "), "\(malformed.transcript)")
    }
}
