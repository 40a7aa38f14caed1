import BleCore
import BleDBus
@testable import BleGateway
import BleSim
import BleTestSupport
import Foundation
import Testing

/// A connectable device with a read/write characteristic and a request/response pair.
enum Lamp {
    static func spec(_ address: String, rssi: Int16 = -60) -> PeripheralSpec {
        PeripheralSpec(address: address, name: "Lamp", rssi: rssi, advertisingIntervalMilliseconds: 100, services: [
            ServiceSpec(uuid: "fff0", characteristics: [
                CharacteristicSpec(uuid: "fff1", flags: ["read", "write"], value: Data("off".utf8)),
                CharacteristicSpec(uuid: "fff2", flags: ["notify"]),
            ]),
        ], rules: [
            // The status command: a5 → notification a5 5a 0c in two packets (battery 90 %, 1.2 V).
            BehaviourRule(.write(characteristic: "0000fff1-0000-1000-8000-00805f9b34fb", prefix: Data([0xa5])), [.notify(characteristic: "0000fff2-0000-1000-8000-00805f9b34fb", value: Data([0xa5, 0x5a, 0x0c]), packets: 2)]),
        ])
    }

    static let status = OperationCommandSpec(name: "status", service: "fff0", write: "fff1", notify: "fff2", command: "a501",
                                             responseLength: 3, timeout: 5, retries: 1,
                                             fields: [.init(key: "batt", offset: 1, size: 1), .init(key: "volt", offset: 2, size: 1, scale: 0.1)])
}

@Suite(.serialized, .timeLimit(.minutes(TestTime.minutes(3))))
@BleLoop
struct GatewayCommandTests {
    /// ble_write_*, ble_read_* and a named operation command from the configuration, each
    /// answered on home/<gw>/BTtoMQTT/<MAC> as OpenMQTTGateway answers.
    @Test func gattReadWriteAndOperationCommands() async throws {
        let address = "C0:FF:EE:00:01:01"
        let topicID = "C0FFEE000101"
        let broker = try await MosquittoBroker.start()
        let fixture = try await SimulatorFixture.start(peripherals: [Lamp.spec(address)])
        defer { fixture.tearDown() }
        let recorder = try MessageRecorder(port: broker.port, patterns: ["home/#"])
        defer { recorder.close() }
        try await recorder.ready()
        let gateway = try Gateway(configuration: gatewayConfiguration(name: "gw", port: broker.port, bus: fixture) {
            $0.operationCommands = [Lamp.status]
        })
        gateway.start()
        defer { gateway.stop() }
        let topic = "home/gw/BTtoMQTT/\(topicID)"
        try await recorder.first("the lamp's advertisement") { $0.topic == topic && $0.json?["rssi"] != nil }
        let commands = "home/gw/commands/MQTTtoBT/config"

        recorder.client.publish(commands, #"{"ble_write_address":"\#(address)","ble_write_service":"fff0","ble_write_char":"fff1","ble_write_value":"on","value_type":"STRING","ttl":2}"#, qos: 1)
        let written = try #require(try await recorder.first("write response") { $0.topic == topic && $0.json?["write"] != nil }.json)
        #expect(written["success"] == .bool(true), "\(written.text)")
        #expect(written["id"] == .string(address))
        #expect(written["characteristic"] == .string("fff1"))
        #expect(written["write"] == .string("on"))
        #expect(fixture.simulator.peripheral(address)?.value(of: "fff1") == Data("on".utf8))

        recorder.client.publish(commands, #"{"ble_read_address":"\#(address)","ble_read_service":"fff0","ble_read_char":"fff1","value_type":"HEX"}"#, qos: 1)
        let read = try #require(try await recorder.first("read response") { $0.topic == topic && $0.json?["read"] != nil }.json)
        #expect(read["success"] == .bool(true), "\(read.text)")
        #expect(read["read"] == .string("6f6e"))

        recorder.client.publish(commands, #"{"cmd":"status","id":"\#(address)"}"#, qos: 1)
        let status = try #require(try await recorder.first("status response") { $0.topic == topic && $0.json?["cmd"] != nil }.json)
        #expect(status["success"] == .bool(true), "\(status.text)")
        #expect(status["batt"] == .integer(90))
        #expect(status["volt"]?.doubleValue == 1.2)

        // A device nobody heard, a bad value and an unknown command: answered, not crashed.
        recorder.client.publish(commands, #"{"ble_read_address":"AA:00:00:00:00:09","ble_read_service":"fff0","ble_read_char":"fff1"}"#, qos: 1)
        let unheard = try #require(try await recorder.first("unheard response") { $0.topic == "home/gw/BTtoMQTT/AA0000000009" }.json)
        #expect(unheard["success"] == .bool(false))
        recorder.client.publish(commands, #"{"ble_write_address":"\#(address)","ble_write_service":"fff0","ble_write_char":"fff1","ble_write_value":"zz","value_type":"HEX"}"#, qos: 1)
        try await recorder.first("refused hex") { $0.topic == topic && $0.json?["error"]?.stringValue?.contains("HEX") == true }
        recorder.client.publish(commands, #"{"cmd":"nope","id":"\#(address)"}"#, qos: 1)
        try await recorder.first("unknown cmd") { $0.topic == topic && $0.json?["error"]?.stringValue?.contains("nope") == true }
        recorder.client.publish(commands, "not json {", qos: 1)
        #expect(gateway.statistics.gattSucceeded == 3)
    }

    /// Three gateways on three adapters of one room, one broker: a write for the lamp that names
    /// no gateway is carried out once, by the gateway that hears it best; after that gateway is
    /// killed (its LWT turns offline), by the next best.
    @Test func fleetRoutesCommandsToTheBestGatewayAndFailsOver() async throws {
        let address = "C0:FF:EE:00:02:01"
        let devicePath = "dev_C0_FF_EE_00_02_01"
        let broker = try await MosquittoBroker.start()
        let configuration = Simulator.Configuration(adapters: [.init(index: 0), .init(index: 1), .init(index: 2)])
        let fixture = try await SimulatorFixture.start(peripherals: [Lamp.spec(address, rssi: -60)], configuration: configuration)
        defer { fixture.tearDown() }
        // hci1 stands next to the lamp, hci2 in the next room, hci0 far away.
        fixture.simulator.adapter("hci0")?.rssiOffsets[address] = -25
        fixture.simulator.adapter("hci2")?.rssiOffsets[address] = -10
        let recorder = try MessageRecorder(port: broker.port, patterns: ["home/#"])
        defer { recorder.close() }
        try await recorder.ready()
        var gateways: [Gateway] = []
        for index in 0..<3 {
            let gateway = try Gateway(configuration: gatewayConfiguration(name: "g\(index)", port: broker.port, bus: fixture, adapter: "hci\(index)") {
                $0.fleet = "fleet"
                $0.fleetAnnounceInterval = .milliseconds(500)
            })
            gateway.start()
            gateways.append(gateway)
        }
        defer { for gateway in gateways { gateway.stop() } }
        try await waitUntil("every gateway picks g1") { gateways.allSatisfy { $0.fleetChoice(for: address) == "g1" } }

        fixture.simulator.clearTrace()
        let command = #"{"ble_write_address":"\#(address)","ble_write_service":"fff0","ble_write_char":"fff1","ble_write_value":"VALUE"}"#
        recorder.client.publish("home/fleet/commands/MQTTtoBT/config", command.replacingOccurrences(of: "VALUE", with: "first"), qos: 1)
        let first = try #require(try await recorder.first("g1's write response") { $0.topic.hasSuffix("/BTtoMQTT/C0FFEE000201") && $0.json?["write"] != nil }.json)
        #expect(first["gateway"] == .string("g1"))
        #expect(first["success"] == .bool(true), "\(first.text)")
        #expect(fixture.simulator.peripheral(address)?.value(of: "fff1") == Data("first".utf8))
        try await waitUntil("every gateway received the command") { gateways.allSatisfy { $0.statistics.commands >= 1 } }
        let connects = fixture.simulator.trace.filter { $0.member == "Connect" && $0.path.hasSuffix(devicePath) }.map(\.path)
        #expect(connects == ["/org/bluez/hci1/\(devicePath)"], "executed once, by g1: \(connects)")
        #expect(gateways[0].statistics.gattSucceeded + gateways[0].statistics.gattFailed == 0)
        #expect(gateways[2].statistics.gattSucceeded + gateways[2].statistics.gattFailed == 0)

        gateways[1].crash()
        try await recorder.first("g1's will") { $0.topic == "home/g1/LWT" && $0.text == "offline" }
        try await waitUntil("the others pick g2") { [gateways] in
            gateways[0].fleetChoice(for: address) == "g2" && gateways[2].fleetChoice(for: address) == "g2"
        }
        fixture.simulator.clearTrace()
        let mark = recorder.messages.count
        recorder.client.publish("home/fleet/commands/MQTTtoBT/config", command.replacingOccurrences(of: "VALUE", with: "second"), qos: 1)
        try await recorder.wait("g2's write response") { messages in
            messages.dropFirst(mark).contains { $0.topic == "home/g2/BTtoMQTT/C0FFEE000201" && $0.json?["write"] == .string("second") }
        }
        #expect(fixture.simulator.peripheral(address)?.value(of: "fff1") == Data("second".utf8))
        let failover = fixture.simulator.trace.filter { $0.member == "Connect" && $0.path.hasSuffix(devicePath) }.map(\.path)
        #expect(failover == ["/org/bluez/hci2/\(devicePath)"], "executed once, by g2: \(failover)")
    }
}
