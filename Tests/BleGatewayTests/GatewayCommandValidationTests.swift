import BleCore
import BleDBus
@testable import BleGateway
import BleSim
import BleTestSupport
import Foundation
import Testing

/// Issue 25: commands from MQTT and from a `--commands` file are checked at the door, and every
/// refusal is answered on MQTT with a code, the JSON path at fault and a message, not only on
/// stderr; nothing an outside publisher sends can crash the gateway or lose its answer.
@Suite(.serialized, .timeLimit(.minutes(TestTime.minutes(3))))
@BleLoop
struct GatewayCommandValidationTests {
    static let address = "C0:FF:EE:00:03:01"
    static let topic = "home/gate/BTtoMQTT/C0FFEE000301"
    static let commands = "home/gate/commands/MQTTtoBT/config"
    static let refusals = "home/gate/BTtoMQTT/commands"

    /// A GATT command for a heard, connectable device with a service or characteristic that is
    /// no UUID used to reach the trapping `BluetoothUUID(string:)` after the connect (exit 132).
    @Test func commandsWithBadUUIDsForAHeardDeviceAreRefusedOnMQTT() async throws {
        try await withGateway { gateway, recorder in
            let address = Self.address
            for (command, path) in [
                (#"{"ble_read_address":"\#(address)","ble_read_service":"not-a-uuid","ble_read_char":"fff1"}"#, "ble_read_service"),
                (#"{"ble_write_address":"\#(address)","ble_write_service":"fff0","ble_write_char":"ff f1","ble_write_value":"on"}"#, "ble_write_char"),
                (#"{"ble_read_address":"\#(address)","ble_read_service":"fff0","ble_read_char":"fff1","ttl":9223372036854775807}"#, "ttl"),
                (#"{"ble_read_address":"\#(address)","ble_read_service":"fff0","ble_read_char":7}"#, "ble_read_char"),
            ] {
                let mark = recorder.messages.count
                recorder.client.publish(Self.commands, command, qos: 1)
                try await recorder.wait("the refusal of \(path)") { messages in
                    messages.dropFirst(mark).contains { $0.topic == Self.topic && $0.json?["path"] == .string(path) }
                }
                let refusal = try #require(recorder.latest(Self.topic) { $0["path"] == .string(path) })
                #expect(refusal["success"] == .bool(false), "\(refusal.text)")
                #expect(refusal["code"] == .string("invalid_field"), "\(refusal.text)")
                #expect(refusal["id"] == .string(address), "\(refusal.text)")
                #expect(refusal["error"]?.stringValue?.hasPrefix(path) == true, "\(refusal.text)")
            }
            #expect(gateway.statistics.gattFailed == 0, "refused before any connection")
            // Still alive, and still carrying out good commands.
            recorder.client.publish(Self.commands, #"{"ble_read_address":"\#(address)","ble_read_service":"fff0","ble_read_char":"fff1"}"#, qos: 1)
            let read = try #require(try await recorder.first("a good read") { $0.topic == Self.topic && $0.json?["read"] != nil }.json)
            #expect(read["success"] == .bool(true), "\(read.text)")
        }
    }

    /// A commands file is checked when it is loaded, each refusal with the JSON path of what is
    /// wrong; before, a bad UUID or `retries` near Int.max trapped at the first matching command.
    @Test func commandsFilesAreCheckedOnLoadWithTheJSONPath() throws {
        let good = #"{"name":"status","service":"fff0","write":"fff1","notify":"fff2","command":"a501","responseLength":3,"retries":1,"fields":[{"key":"batt","offset":1,"size":1}]}"#
        let cases: [(String, String)] = [
            (#"{"commands":[\#(good),\#(good.replacingOccurrences(of: "\"status\"", with: "\"other\"").replacingOccurrences(of: "\"fff0\"", with: "\"fffz\""))]}"#, "commands[1].service"),
            (#"{"commands":[\#(good.replacingOccurrences(of: "\"retries\":1", with: "\"retries\":9223372036854775807"))]}"#, "commands[0].retries"),
            (#"[\#(good.replacingOccurrences(of: "\"fff2\"", with: "\"notify-me\""))]"#, "[0].notify"),
            (#"{"commands":[\#(good.replacingOccurrences(of: "\"retries\"", with: "\"retry\""))]}"#, "commands[0].retry"),
            (#"{"commands":[\#(good.replacingOccurrences(of: "\"offset\":1", with: "\"offset\":3"))]}"#, "commands[0].fields[0].offset"),
            (#"{"commands":[\#(good.replacingOccurrences(of: "\"a501\"", with: "\"a5z1\""))]}"#, "commands[0].command"),
            (#"{"commands":[\#(good),\#(good)]}"#, "commands[1].name"),
            (#"{"commands":[\#(good.replacingOccurrences(of: "\"responseLength\":3", with: "\"responseLength\":1e300"))]}"#, "commands[0].responseLength"),
            // make fuzz (operation-commands): a scale of 0 trapped at the first response.
            (#"{"commands":[\#(good.replacingOccurrences(of: "\"size\":1}", with: "\"size\":1,\"scale\":0.0}"))]}"#, "commands[0].fields[0].scale"),
        ]
        for (text, path) in cases {
            let file = try Self.temporaryFile(text)
            defer { try? FileManager.default.removeItem(atPath: file) }
            do {
                let specs = try OperationCommandSpec.load(path: file)
                Issue.record("accepted \(path): \(specs)")
            } catch {
                #expect(error.path == path, "\(error)")
                #expect(error.code == "invalid_field", "\(error)")
                #expect(error.description.hasPrefix(path), "\(error)")
            }
        }
        let file = try Self.temporaryFile("[\(good)]")
        defer { try? FileManager.default.removeItem(atPath: file) }
        #expect(try OperationCommandSpec.load(path: file) == [OperationCommandSpec(name: "status", service: "fff0", write: "fff1", notify: "fff2",
                                                                                   command: "a501", responseLength: 3, retries: 1,
                                                                                   fields: [.init(key: "batt", offset: 1, size: 1)])])
        // A spec made in code is not checked before `parse`: a scale of 0, NaN or one too small
        // for a power of ten scales the value without rounding it, and never traps.
        for scale in [0.0, -0.0, .nan, .infinity, .leastNonzeroMagnitude, 1e-300] {
            let unchecked = OperationCommandSpec(name: "s", service: "fff0", write: "fff1", notify: "fff2", command: "a5", responseLength: 2,
                                                 fields: [.init(key: "v", offset: 0, size: 2, scale: scale)])
            let fields = unchecked.parse(Data([0x10, 0x00]))
            #expect(fields.count == 1 && fields[0].0 == "v", "scale \(scale): \(fields)")
            if case .number(let value) = fields[0].1, scale.isFinite { #expect(value == 16 * scale, "scale \(scale): \(value)") }
        }
        // A spec made in code is checked when the gateway is made.
        var bad = Lamp.status
        bad.retries = .max
        #expect(throws: CommandError.self) {
            _ = try Gateway(configuration: GatewayConfiguration(name: "g", mqtt: MQTTOptions(clientID: "g"), operationCommands: [bad]))
        }
    }

    /// `blekit gateway --commands FILE` refuses a bad file at start, naming the path, instead of
    /// crashing on the first command.
    @Test func theCLIRefusesABadCommandsFileAtStart() async throws {
        let blekit = try #require(BlekitBinary.path, "blekit is not built next to the test bundle")
        let file = try Self.temporaryFile(#"{"commands":[{"name":"x","service":"fff0","write":"fff1","notify":"fff2","command":"00","responseLength":1,"retries":9223372036854775807}]}"#)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let child = try ChildProcess(arguments: ["/bin/sh", "-c", "exec \"$0\" \"$@\" 2>&1", blekit, "gateway", "--commands", file,
                                                 "--broker", "127.0.0.1:1"])
        let (status, output) = await Task.detached { child.runToCompletion(timeout: 30) }.value
        #expect(status == 2, "\(output)")
        #expect(output.contains("commands[0].retries"), "\(output)")
    }

    /// `--white-list` with a misspelt address, `--min-rssi 90` (OpenMQTTGateway's magnitude) and
    /// a negative `--interval` used to run and publish nothing (or everything), exiting 0:
    /// they are refused at start with status 2, before any broker or bus is tried.
    @Test func theCLIRefusesBadFilterOptionsAtStart() async throws {
        let blekit = try #require(BlekitBinary.path, "blekit is not built next to the test bundle")
        for (options, message) in [
            (["--white-list", "C0:FF:EE:00:00:1"], "--white-list wants a device address such as C0:FF:EE:00:00:01, not 'C0:FF:EE:00:00:1'"),
            (["--black-list", "kitchen"], "--black-list wants a device address"),
            (["--min-rssi", "90"], "--min-rssi wants a whole number from -127 to 20, not '90'"),
            (["--interval", "-5"], "--interval wants a whole number from 0 to 86400000, not '-5'"),
        ] {
            let child = try ChildProcess(arguments: ["/bin/sh", "-c", "exec \"$0\" \"$@\" 2>&1", blekit, "gateway", "--broker", "127.0.0.1:1",
                                                     "--bus", "unix:path=/nonexistent/blekit-gateway.sock"] + options)
            let (status, output) = await Task.detached { child.runToCompletion(timeout: 30) }.value
            #expect(status == 2, "\(options): \(output)")
            #expect(output.contains(message), "\(options): \(output)")
        }
    }

    /// Responses addressed with `#`, `+`, `/` or a megabyte string were refused by libmosquitto
    /// or published elsewhere without a word: the address is refused at the door, and the
    /// refusal is answered on `…/BTtoMQTT/commands`.
    @Test func addressesThatAreNoTopicLevelAreRefusedOnTheCommandsTopic() async throws {
        try await withGateway { gateway, recorder in
            let long = String(repeating: "A", count: 60_000)
            for address in ["AA:BB:CC:DD:EE:#", "+", "AA/BB/CC/DD/EE/FF", long, ""] {
                let mark = recorder.messages.count
                recorder.client.publish(Self.commands, #"{"ble_read_address":"\#(address)","ble_read_service":"fff0","ble_read_char":"fff1"}"#, qos: 1)
                try await recorder.wait("the refusal of '\(address.prefix(20))'") { messages in
                    messages.dropFirst(mark).contains { $0.topic == Self.refusals && $0.json?["path"] == .string("ble_read_address") }
                }
                let refusal = try #require(recorder.messages.dropFirst(mark).last { $0.topic == Self.refusals }?.json)
                #expect(refusal["code"] == .string("invalid_field"), "\(refusal.text)")
                #expect(refusal["success"] == .bool(false))
                #expect(refusal["id"] == nil)
                #expect(refusal.text.utf8.count < 1_000, "the long address is not echoed")
            }
            #expect(!recorder.messages.contains { $0.topic.hasPrefix("home/gate/BTtoMQTT/") && $0.topic.dropFirst(19).contains("/") })
            #expect(gateway.mqtt.refusedMessages == 0, "nothing reached libmosquitto with a bad topic")
        }
    }

    /// Over 64 KiB is refused unread (an 8 MB white-list was applied before, RSS 136 MB);
    /// invalid JSON and a JSON non-object are refused on MQTT, not only on stderr.
    @Test func oversizedAndMalformedPayloadsAreRefusedOnMQTT() async throws {
        try await withGateway { gateway, recorder in
            let addresses = (0..<5_000).map { String(format: "\"AA:BB:CC:DD:%02X:%02X\"", $0 >> 8, $0 & 0xFF) }.joined(separator: ",")
            let huge = #"{"white-list":[\#(addresses)]}"#
            #expect(huge.utf8.count > Gateway.maximumCommandBytes)
            for (payload, code) in [(huge, "payload_too_large"), ("not json {", "invalid_json"), ("[1,2,3]", "not_an_object"), ("42", "not_an_object")] {
                let mark = recorder.messages.count
                recorder.client.publish(Self.commands, payload, qos: 1)
                try await recorder.wait("the \(code) refusal") { messages in
                    messages.dropFirst(mark).contains { $0.topic == Self.refusals && $0.json?["code"] == .string(code) }
                }
                let refusal = try #require(recorder.messages.dropFirst(mark).last { $0.topic == Self.refusals }?.json)
                #expect(refusal["success"] == .bool(false))
                #expect(refusal["gateway"] == .string("gate"))
                #expect(refusal["error"]?.stringValue?.isEmpty == false)
            }
            #expect(gateway.configuration.whiteList.isEmpty, "the oversized white-list was not applied")
            // Just under the limit is read and applied.
            recorder.client.publish(Self.commands, #"{"white-list":["C0:FF:EE:00:03:01"]}"#, qos: 1)
            try await recorder.first("the settings") { $0.topic == "home/gate/BTtoMQTT/config" }
            #expect(gateway.configuration.whiteList == ["C0:FF:EE:00:03:01"])
        }
    }

    /// A config command with a bad value (`"minrssi": "loud"`, a white-list entry that is no
    /// address, a negative interval), a misspelt key (`minrsi`) or nothing in it used to be
    /// skipped, clamped or applied without a word (a misspelt white-list address then filtered
    /// out every device): each is refused on MQTT with its path, and nothing of it is applied.
    @Test func configCommandsWithBadValuesOrUnknownKeysAreRefusedOnMQTTAndNotApplied() async throws {
        try await withGateway { gateway, recorder in
            for (payload, path) in [
                (#"{"minrssi":"loud"}"#, "minrssi"),
                (#"{"white-list":["C0:FF:EE:00:03:0"]}"#, "white-list[0]"),
                (#"{"black-list":"C0:FF:EE:00:03:01"}"#, "black-list"),
                (#"{"interval":-5}"#, "interval"),
                (#"{"onlysensors":"yes"}"#, "onlysensors"),
                (#"{"minrssi":-80,"white-list":["nope"]}"#, "white-list[0]"),
                (#"{"minrsi":-80}"#, "minrsi"),
                ("{}", ""),
            ] {
                let mark = recorder.messages.count
                recorder.client.publish(Self.commands, payload, qos: 1)
                try await recorder.wait("the refusal of \(payload)") { messages in
                    messages.dropFirst(mark).contains { $0.topic == Self.refusals && $0.json?["path"] == .string(path) }
                }
                let refusal = try #require(recorder.messages.dropFirst(mark).last { $0.topic == Self.refusals }?.json)
                #expect(refusal["success"] == .bool(false), "\(refusal.text)")
                #expect(refusal["code"] == .string("invalid_field"), "\(refusal.text)")
                #expect(refusal["error"]?.stringValue?.isEmpty == false, "\(refusal.text)")
                #expect(!recorder.messages.dropFirst(mark).contains { $0.topic == "home/gate/BTtoMQTT/config" }, "\(payload) was not applied")
            }
            let misspelt = try #require(recorder.messages.last { $0.topic == Self.refusals && $0.json?["path"] == .string("minrsi") }?.json)
            #expect(misspelt["error"]?.stringValue?.contains("did you mean 'minrssi'") == true, "\(misspelt.text)")
            #expect(gateway.configuration.whiteList.isEmpty && gateway.configuration.minimumRSSI == -100
                    && gateway.configuration.publishInterval == .zero && !gateway.configuration.onlySensors)
            // A good one is still applied and echoed.
            recorder.client.publish(Self.commands, #"{"minrssi":-80,"interval":100}"#, qos: 1)
            let settings = try #require(try await recorder.first("the settings") { $0.topic == "home/gate/BTtoMQTT/config" }.json)
            #expect(settings["minrssi"] == .integer(-80) && settings["interval"] == .integer(100), "\(settings.text)")
        }
    }

    /// A gateway named with a topic wildcard, or a fleet with a '/', is refused when it is made.
    @Test func configurationNamesThatAreNoTopicLevelAreRefused() {
        for change in [{ (c: inout GatewayConfiguration) in c.name = "kitchen/1" }, { $0.fleet = "#" }, { $0.baseTopic = "" },
                       { $0.discoveryPrefix = String(repeating: "x", count: 1_000) }] {
            var configuration = GatewayConfiguration(name: "g", mqtt: MQTTOptions(clientID: "g"))
            change(&configuration)
            #expect(throws: CommandError.self) { _ = try Gateway(configuration: configuration) }
        }
    }

    // MARK: Support

    private func withGateway(_ body: (Gateway, MessageRecorder) async throws -> Void) async throws {
        let broker = try await MosquittoBroker.start()
        let fixture = try await SimulatorFixture.start(peripherals: [Lamp.spec(Self.address)])
        defer { fixture.tearDown() }
        let recorder = try MessageRecorder(port: broker.port, patterns: ["home/#"])
        defer { recorder.close() }
        try await recorder.ready()
        let gateway = try Gateway(configuration: gatewayConfiguration(name: "gate", port: broker.port, bus: fixture) {
            $0.operationCommands = [Lamp.status]
        })
        gateway.start()
        defer { gateway.stop() }
        try await recorder.first("the lamp's advertisement") { $0.topic == Self.topic && $0.json?["rssi"] != nil }
        try await body(gateway, recorder)
    }

    private static func temporaryFile(_ text: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("blekit-commands-\(UUID().uuidString).json").path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }
}
