import Foundation
import Testing

/// `blekit scan`, `info`, `gatt`, `read`, `write` and `notify` against BleSim, checking what
/// they print as well as their exit status.
@Suite(.serialized) struct CentralCommandTests {
    @Test func scanListsEachDeviceOnceWithNamesThenACount() async throws {
        let room = try await SimulatedRoom.start(Rooms.heartRate)
        defer { Task { await room.stop() } }
        let run = try await room.blekit(["scan", "--count", "3", "--timeout", "30"])
        #expect(run.status == 0, "\(run.transcript)")
        let lines = run.output.split(separator: "\n").map(String.init)
        let heart = try #require(lines.first { $0.hasPrefix("C0:FF:EE:00:00:02") }, "\(run.transcript)")
        #expect(heart.contains("HR-Strap") && heart.contains("manufacturer: Apple, Inc.") && heart.contains("services: Heart Rate"), "\(heart)")
        let led = try #require(lines.first { $0.hasPrefix("C0:FF:EE:00:00:01") })
        #expect(led.contains("Nordic Semiconductor ASA"), "\(led)")
        #expect(lines.filter { $0.hasPrefix("C0:FF:EE:00:00:02") }.count == 1, "each device is printed once when piped")
        #expect(lines.last == "3 device(s) heard, scan stopped after 3 device(s)", "\(run.transcript)")
    }

    @Test func scanFiltersByServiceNameRSSIAndManufacturer() async throws {
        let room = try await SimulatedRoom.start(Rooms.heartRate)
        defer { Task { await room.stop() } }
        let byService = try await room.blekit(["scan", "--count", "1", "--timeout", "30", "--service", "Heart Rate"])
        #expect(byService.output.contains("HR-Strap") && !byService.output.contains("LED-Status") && !byService.output.contains("Far-Away"), "\(byService.transcript)")
        let byName = try await room.blekit(["scan", "--count", "1", "--timeout", "30", "--name", "led"])
        #expect(byName.output.contains("LED-Status") && !byName.output.contains("HR-Strap"), "\(byName.transcript)")
        let byRSSI = try await room.blekit(["scan", "--count", "2", "--timeout", "30", "--rssi", "-70"])
        #expect(byRSSI.output.contains("LED-Status") && byRSSI.output.contains("HR-Strap") && !byRSSI.output.contains("Far-Away"), "\(byRSSI.transcript)")
        let byCompany = try await room.blekit(["scan", "--count", "1", "--timeout", "30", "--manufacturer", "nordic"])
        #expect(byCompany.output.contains("LED-Status") && !byCompany.output.contains("HR-Strap"), "\(byCompany.transcript)")
        let json = try await room.blekit(["scan", "--count", "1", "--timeout", "30", "--manufacturer", "0x004C", "--json"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any], "\(json.transcript)")
        #expect(object["address"] as? String == "C0:FF:EE:00:00:02")
        #expect((object["manufacturers"] as? [[String: Any]])?.first?["name"] as? String == "Apple, Inc.")
        let bad = try await room.blekit(["scan", "--manufacturer", "no such company at all"])
        #expect(bad.status == 2 && bad.errors.contains("neither a company identifier"), "\(bad.transcript)")
    }

    @Test func infoShowsTheAdvertisementWithNames() async throws {
        let room = try await SimulatedRoom.start(Rooms.heartRate)
        defer { Task { await room.stop() } }
        let run = try await room.blekit(["info", "HR-Strap"])
        #expect(run.status == 0, "\(run.transcript)")
        #expect(run.output.contains("Device C0:FF:EE:00:00:02"))
        #expect(run.output.contains("Name: HR-Strap"))
        #expect(run.output.contains("Manufacturer data: 0x004C Apple, Inc.: 02 15"), "\(run.transcript)")
        #expect(run.output.contains("Service: 180D Heart Rate"), "\(run.transcript)")
    }

    @Test func gattPrintsTheTreeWithFlagsNamesAndDecodedValues() async throws {
        let room = try await SimulatedRoom.start(Rooms.heartRate)
        defer { Task { await room.stop() } }
        let run = try await room.blekit(["gatt", "C0:FF:EE:00:00:02", "--values"])
        #expect(run.status == 0, "\(run.transcript)")
        for expected in ["service 180D Heart Rate", "characteristic 2A37 Heart Rate Measurement [notify]",
                         "descriptor 2902 Client Characteristic Configuration", "service 180F Battery Service",
                         "characteristic 2A19 Battery Level [read, notify] = 5a  (90 %)",
                         "characteristic 2A29 Manufacturer Name String [read] = 41 63 6d 65  (\"Acme\")",
                         "(Bluetooth SIG vendor 0x0059 (Nordic Semiconductor ASA), product 0x1234, version 5.2.1)",
                         "4 service(s), 6 characteristic(s)"] {
            #expect(run.output.contains(expected), "missing \(expected)\n\(run.transcript)")
        }
        let json = try await room.blekit(["gatt", "C0:FF:EE:00:00:01", "--json"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any], "\(json.transcript)")
        let services = try #require(object["services"] as? [[String: Any]])
        #expect(services.contains { $0["uuid"] as? String == "FF00" })
    }

    @Test func readDecodesAndFailsHelpfully() async throws {
        let room = try await SimulatedRoom.start(Rooms.heartRate)
        defer { Task { await room.stop() } }
        let run = try await room.blekit(["read", "HR-Strap", "Battery Level"])
        #expect(run.status == 0 && run.output == "2A19 Battery Level: 5a  (90 %)\n", "\(run.transcript)")
        let json = try await room.blekit(["read", "HR-Strap", "2a19", "--json"])
        #expect(json.output.contains(#""hex":"5a""#) && json.output.contains(#""value":"90 %""#), "\(json.transcript)")
        let missing = try await room.blekit(["read", "HR-Strap", "ffee"])
        #expect(missing.status == 1 && missing.errors.contains("has no characteristic FFEE") && missing.errors.contains("2A19 Battery Level"), "\(missing.transcript)")
        let notReadable = try await room.blekit(["read", "HR-Strap", "2a37"])
        #expect(notReadable.status == 1 && notReadable.errors.contains("cannot be read") && notReadable.errors.contains("blekit notify"), "\(notReadable.transcript)")
        let absent = try await room.blekit(["read", "C0:FF:EE:99:99:99", "2a19", "--timeout", "1"])
        #expect(absent.status == 6 && absent.errors.contains("was not found within 1 s"), "\(absent.transcript)")
    }

    @Test func writeHexAndTextWithAndWithoutResponse() async throws {
        let room = try await SimulatedRoom.start(Rooms.heartRate)
        defer { Task { await room.stop() } }
        let hex = try await room.blekit(["write", "LED-Status", "ff01", "0a0b"])
        #expect(hex.status == 0 && hex.output.contains("wrote 2 byte(s) to FF01 with response (acknowledged)"), "\(hex.transcript)")
        let readBack = try await room.blekit(["read", "LED-Status", "ff01"])
        #expect(readBack.output.contains("FF01: 0a 0b"), "the write reached the device: \(readBack.transcript)")
        let text = try await room.blekit(["write", "LED-Status", "ff01", "hi", "--text", "--without-response"])
        #expect(text.status == 0 && text.output.contains("wrote 2 byte(s) to FF01 without response"), "\(text.transcript)")
        let badHex = try await room.blekit(["write", "LED-Status", "ff01", "xyz"])
        #expect(badHex.status == 2 && badHex.errors.contains("is not hex"), "\(badHex.transcript)")
        let readOnly = try await room.blekit(["write", "HR-Strap", "2a19", "01"])
        #expect(readOnly.status == 1 && readOnly.errors.contains("cannot be written"), "\(readOnly.transcript)")
    }

    @Test func notifyCountsAndStopsCleanlyOnSIGINT() async throws {
        let room = try await SimulatedRoom.start(Rooms.heartRate)
        defer { Task { await room.stop() } }
        let counted = try await room.blekit(["notify", "HR-Strap", "Heart Rate Measurement", "--count", "3"])
        #expect(counted.status == 0, "\(counted.transcript)")
        #expect(counted.output.components(separatedBy: "16 48  (72 bpm, contact detected)").count - 1 == 3, "\(counted.transcript)")
        #expect(counted.output.hasSuffix("3 notification(s)\n"), "\(counted.transcript)")

        let running = try RunningCLI(["notify", "HR-Strap", "2a37", "--bus", room.bus.address])
        #expect(await running.line()?.contains("(Ctrl-C to stop)") == true)
        let first = await running.line()
        #expect(first?.contains("72 bpm") == true, "a notification arrives before the interrupt: \(first ?? "nothing")")
        let stopped = await running.stop(with: SIGINT)
        #expect(stopped.status == 0, "SIGINT is a clean stop: \(stopped.transcript)")
        #expect(stopped.output.contains("notification(s), interrupted"), "\(stopped.transcript)")
        // Unsubscribed and disconnected on the way out: the device is free again.
        let after = try await room.blekit(["read", "HR-Strap", "2a19"])
        #expect(after.status == 0, "\(after.transcript)")
    }
}
