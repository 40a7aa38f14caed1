import Foundation
import Testing

/// `blekit serve` (PeripheralManager from a file) seen by `blekit read/write/notify` on the
/// other simulated adapter, and `blekit pair` / `bonds` against a BleSim peripheral.
@Suite(.serialized) struct PeripheralAndPairingCommandTests {
    static let servedFile = #"""
    {"name": "Served-LED", "manufacturerData": {"0x0059": "01"},
     "services": [{"uuid": "ff00", "characteristics": [
       {"uuid": "ff01", "flags": ["read", "write", "write-without-response"], "value": "00"},
       {"uuid": "ff02", "flags": ["read", "notify"], "value": "00"},
       {"uuid": "2a19", "flags": ["read"], "value": "4b"}]}],
     "rules": [{"on": {"write": "ff01"}, "then": [{"echo": "ff02"}]},
               {"on": {"write": "ff01", "prefix": "ee"}, "then": [{"attError": 19}]}]}
    """#

    @Test func servedPeripheralAnswersReadsWritesAndNotifies() async throws {
        let room = try await SimulatedRoom.start(#"{"peripherals": []}"#)
        defer { Task { await room.stop() } }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("blekit-serve-\(UUID().uuidString).json")
        try Data(Self.servedFile.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let server = try RunningCLI(["serve", file.path, "--bus", room.bus.address, "--adapter", "hci0"])
        let banner = await server.line()
        #expect(banner?.contains("serving Served-LED on hci0: FF00; advertising") == true, "\(banner ?? "nothing")")
        let reach = await server.line()
        #expect(reach?.contains("centrals reach it at hci0's address 00:AA:01:00:00:00, advertised as Served-LED") == true, "\(reach ?? "nothing")")
        let tree = await server.line()
        #expect(tree?.contains("service FF00: FF01 [read, write-without-response, write]; FF02 [read, notify]; 2A19 Battery Level [read]") == true, "\(tree ?? "nothing")")

        let central = ["--adapter", "hci1"]
        let environment = CLIRun.freshEnvironment()
        let scan = try await room.blekit(["scan", "--count", "1", "--timeout", "30"] + central, environment: environment)
        #expect(scan.output.contains("Served-LED") && scan.output.contains("Nordic Semiconductor ASA"), "\(scan.transcript)")
        let served = "00:AA:01:00:00:00"
        let read = try await room.blekit(["read", "Served-LED", "Battery Level"] + central, environment: environment)
        #expect(read.status == 0 && read.output.contains("2A19 Battery Level: 4b  (75 %)"), "\(read.transcript)")
        // After that connection BlueZ calls the device by its GAP name (the serving adapter's
        // alias); the advertised name still finds it.
        let write = try await room.blekit(["write", "Served-LED", "ff01", "0102"] + central, environment: environment)
        #expect(write.status == 0, "\(write.transcript)")
        let readBack = try await room.blekit(["read", "Served-LED", "ff01"] + central, environment: environment)
        #expect(readBack.output.contains("FF01: 01 02"), "a written value reads back: \(readBack.transcript)")
        let refused = try await room.blekit(["write", served, "ff01", "ee"] + central, environment: environment)
        #expect(refused.status == 1 && refused.errors.contains("ATT error"), "the rule's ATT error reaches the central: \(refused.transcript)")

        let listener = try RunningCLI(["notify", served, "ff02", "--count", "1", "--bus", room.bus.address] + central)
        #expect(await listener.line()?.contains("notifications from FF02") == true)
        let pushed = try await room.blekit(["write", served, "ff01", "abcd", "--without-response"] + central)
        #expect(pushed.status == 0, "\(pushed.transcript)")
        let notified = await listener.stop(with: 0)
        #expect(notified.output.contains("ab cd"), "the echo rule notified the subscriber: \(notified.transcript)")

        let log = await server.stop(with: SIGINT)
        #expect(log.status == 0, "\(log.transcript)")
        for expected in ["read 2A19 Battery Level by", "→ 4b", "write FF01 by", "← 01 02", "ATT error 0x13 (rule)",
                         "subscribed to FF02", "notify FF02 → ab cd", "stopped (interrupted)"] {
            #expect(log.output.contains(expected), "missing \(expected)\n\(log.transcript)")
        }
    }

    @Test func serveRefusesABadFile() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("blekit-serve-\(UUID().uuidString).json")
        try Data(#"{"name": "x", "services": []}"#.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let empty = try await CLIRun.run(["serve", file.path])
        #expect(empty.status == 1 && empty.errors.contains("has no services"), "\(empty.transcript)")
        let missing = try await CLIRun.run(["serve", "/nonexistent/file.json"])
        #expect(missing.status == 1 && missing.errors.contains("cannot read /nonexistent/file.json"), "\(missing.transcript)")
    }

    @Test func pairListBondsAndForget() async throws {
        let room = try await SimulatedRoom.start(Rooms.heartRate)
        defer { Task { await room.stop() } }
        let before = try await room.blekit(["bonds"])
        #expect(before.status == 0 && before.output.contains("0 paired device(s) on hci0"), "\(before.transcript)")
        let pair = try await room.blekit(["pair", "HR-Strap", "--yes"])
        #expect(pair.status == 0 && pair.output.contains("paired with HR-Strap C0:FF:EE:00:00:02, bonded"), "\(pair.transcript)")
        let again = try await room.blekit(["pair", "HR-Strap", "--yes"])
        #expect(again.output.contains("already paired and bonded"), "\(again.transcript)")
        let listed = try await room.blekit(["bonds"])
        #expect(listed.output.contains("C0:FF:EE:00:00:02  HR-Strap  bonded") && listed.output.contains("1 paired device(s)"), "\(listed.transcript)")
        let removed = try await room.blekit(["bonds", "--remove", "C0:FF:EE:00:00:02"])
        #expect(removed.status == 0 && removed.output.contains("forgot C0:FF:EE:00:00:02"), "\(removed.transcript)")
        let after = try await room.blekit(["bonds"])
        #expect(after.output.contains("0 paired device(s)"), "\(after.transcript)")
        let unknown = try await room.blekit(["bonds", "--remove", "C0:FF:EE:00:00:01"])
        #expect(unknown.status == 6 && unknown.errors.contains("is not paired"), "\(unknown.transcript)")
    }
}
