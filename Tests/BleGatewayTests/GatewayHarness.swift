import BleCore
import BleDBus
@testable import BleGateway
import BleSim
import BleTestSupport
import Foundation
import Testing

/// A subscriber on the test's broker that records every message, with deadline-bound waits.
@BleLoop
final class MessageRecorder {
    let client: MQTTClient
    private let recorder = EventRecorder<MQTTClient.Message>()
    var messages: [MQTTClient.Message] { recorder.events }

    init(port: Int32, patterns: [String], name: String = "recorder") throws {
        client = try MQTTClient(options: MQTTOptions(host: "127.0.0.1", port: port, clientID: "\(name)-\(UUID().uuidString.prefix(8))",
                                                     reconnectDelay: .milliseconds(100)))
        for pattern in patterns { client.subscribe(pattern, qos: 1) }
        client.onMessage = { [weak self] message in self?.recorder.append(message) }
        client.start()
    }

    /// Waits until the recorder is connected and its subscriptions are in place (a message it
    /// published to itself came back).
    func ready(timeout: Duration = .seconds(10)) async throws {
        let probe = "blekit-test/probe/\(UUID().uuidString)"
        client.subscribe(probe, qos: 1)
        // Published at once: while connecting it waits in the offline buffer, which is flushed
        // after the subscriptions are sent.
        client.publish(probe, "ping", qos: 1)
        try await recorder.first(timeout: timeout, "probe") { $0.topic == probe }
    }

    @discardableResult
    func first(_ what: String, timeout: Duration = .seconds(20), where predicate: @escaping (MQTTClient.Message) -> Bool) async throws -> MQTTClient.Message {
        try await recorder.first(timeout: timeout, what, where: predicate)
    }

    func wait(_ what: String, timeout: Duration = .seconds(20), until condition: @escaping ([MQTTClient.Message]) -> Bool) async throws {
        try await recorder.wait(what, timeout: timeout, until: condition)
    }

    /// The JSON of the newest message on `topic` satisfying `predicate`.
    func latest(_ topic: String, where predicate: (JSONValue) -> Bool = { _ in true }) -> JSONValue? {
        messages.reversed().lazy.filter { $0.topic == topic }.compactMap { JSONValue.parse($0.payload) }.first(where: predicate)
    }

    func close() { client.close() }
}

extension MQTTClient.Message {
    var json: JSONValue? { JSONValue.parse(payload) }
    var text: String { String(decoding: payload, as: UTF8.self) }
}

/// The sensors of the format tests: one per decoder, in a room of plain beacons.
enum Room {
    static let bthome = "C0:FF:EE:00:00:01"
    static let iBeacon = "C0:FF:EE:00:00:02"
    static let eddystoneUID = "C0:FF:EE:00:00:03"
    static let eddystoneURL = "C0:FF:EE:00:00:04"
    static let eddystoneTLM = "C0:FF:EE:00:00:05"
    static let battery = "C0:FF:EE:00:00:06"
    static let temperature = "C0:FF:EE:00:00:07"

    static func hex(_ text: String) -> Data { Data(hex: text) ?? Data() }

    static var sensors: [PeripheralSpec] {
        [
            // BTHome v2: packet 1, battery 100 %, 23.93 °C, 49.19 %, 2.972 V.
            PeripheralSpec(address: bthome, name: "BTHome-TH", rssi: -55, serviceData: ["fcd2": hex("40000101640259090337130c9c0b")],
                           connectable: false),
            PeripheralSpec(address: iBeacon, rssi: -62,
                           manufacturerData: [0x004C: hex("0215e2c56db5dffb48d2b060d0f5a71096e000010002c5")], connectable: false),
            PeripheralSpec(address: eddystoneUID, rssi: -70, serviceData: ["feaa": hex("00f500112233445566778899aabbccddeeff")], connectable: false),
            PeripheralSpec(address: eddystoneURL, rssi: -71, serviceData: ["feaa": hex("10f503626c656b697407")], connectable: false),
            PeripheralSpec(address: eddystoneTLM, rssi: -72, serviceData: ["feaa": hex("20000bb81a800000000a00000064")], connectable: false),
            PeripheralSpec(address: battery, rssi: -58, serviceData: ["180f": hex("5a")], connectable: false),
            PeripheralSpec(address: temperature, rssi: -59, serviceData: ["2a6e": hex("9808")], connectable: false),
        ]
    }

    /// `count` plain beacons (company 0xFFFF), as BleSim's crowd scenarios make them.
    static func crowd(_ count: Int, interval: Double = 100) -> [PeripheralSpec] {
        (0..<count).map { index in
            PeripheralSpec(address: String(format: "DE:AD:BE:EF:%02X:%02X", index >> 8, index & 0xFF), name: "beacon-\(index)",
                           rssi: -75, rssiJitter: 6, manufacturerData: [0xFFFF: Data([UInt8(index >> 8), UInt8(index & 0xFF)])],
                           advertisingIntervalMilliseconds: interval, connectable: false)
        }
    }
}

@BleLoop
func gatewayConfiguration(name: String, port: Int32, bus: SimulatorFixture, adapter: String = "hci0",
                          _ change: (inout GatewayConfiguration) -> Void = { _ in }) -> GatewayConfiguration {
    var configuration = GatewayConfiguration(
        name: name,
        mqtt: MQTTOptions(host: "127.0.0.1", port: port, clientID: "blekit-\(name)", reconnectDelay: .milliseconds(100),
                          maximumReconnectDelay: .milliseconds(400)),
        bus: .address(bus.bus.address), adapter: adapter,
        central: CentralManagerOptions(bus: .address(bus.bus.address), adapter: adapter, operationTimeout: .seconds(5),
                                       connectTimeout: .seconds(5)))
    change(&configuration)
    return configuration
}

/// Runs the outside decoders (PyPI's theengsdecoder and bthome-ble, in .build's venv) on
/// `pairs`; nil when PyPI is unreachable (the caller skips loudly), else the checker's output and status.
/// The first run installs the venv (tens of seconds): the waiting happens on a thread of its own,
/// never on the caller's, which is often the loop every other test of the process needs.
func runOutsideDecoders(_ pairs: JSONValue) async throws -> (status: Int32?, output: String)? {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread {
            continuation.resume(with: Result { try runOutsideDecodersBlocking(pairs) })
        }
    }
}

private func runOutsideDecodersBlocking(_ pairs: JSONValue) throws -> (status: Int32?, output: String)? {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    let setup = try ChildProcess(arguments: ["/bin/bash", root.appendingPathComponent("scripts/gateway-python").path], standardErrorPath: nil)
    let (status, output) = setup.runToCompletion(timeout: 600)
    if status == 3 { return nil }
    guard status == 0 else { throw GatewayTestError("scripts/gateway-python failed (status \(String(describing: status)))") }
    let python = output.trimmingCharacters(in: .whitespacesAndNewlines)
    let input = FileManager.default.temporaryDirectory.appendingPathComponent("blekit-frames-\(UUID().uuidString).json")
    try pairs.data.write(to: input)
    defer { try? FileManager.default.removeItem(at: input) }
    let script = root.appendingPathComponent("Tests/BleGatewayTests/Python/check_frames.py").path
    let checker = try ChildProcess(arguments: [python, script, input.path], standardErrorPath: nil)
    return checker.runToCompletion(timeout: 120)
}

struct GatewayTestError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Waits until `condition` holds, checking it on the loop every 50 ms, at most `timeout`: for
/// conditions on state that changes without a message (counters of filtered advertisements).
@BleLoop
func waitUntil(_ what: String, timeout: Duration = .seconds(20), _ condition: @escaping @BleLoop () -> Bool) async throws {
    let recorder = EventRecorder<Int>()
    let timer = LoopTimer.scheduled(after: .milliseconds(50), repeating: .milliseconds(50)) {
        recorder.append(recorder.events.count)
    }
    defer { timer.cancel() }
    try await recorder.wait(what, timeout: timeout) { _ in condition() }
}
