import BleCore
import BleDBus
import BleDSL
import BleTestSupport
import Foundation
import Testing

/// Issue 12's first done-when, across two real processes on one private bus with BleSim:
/// `blekit serve --agent` (a separate process: `PeripheralManager` serving and advertising, and
/// the default pairing agent) on hci0, and this test process as the central on hci1 with the
/// DSL's `BleManager`. It finds the peripheral, connects, writes a command and gets a
/// four-packet response through `DeviceCharacteristicValue`, subscribes to a second
/// characteristic and receives its notifications, and pairs with numeric comparison: both
/// processes' agents are asked to confirm, with the same passkey.
@BleLoop
@Suite(.serialized) struct TwoProcessFlowTests {
    nonisolated static let ticker = BluetoothUUID(string: "12345678-1234-1234-1234-1234567890af")
    /// The command's answer: 64 bytes, notified in four packets by the served file's rule.
    nonisolated static let response = Data((0..<64).map { UInt8($0) })

    static var servedFile: String {
        func uuid(_ value: BluetoothUUID) -> String { value.uuidString128.lowercased() }
        let hex = response.map { String(format: "%02x", $0) }.joined()
        return """
        {"name": "flow-periph", "serviceUUIDs": ["\(uuid(Chat.service))"],
         "services": [{"uuid": "\(uuid(Chat.service))", "characteristics": [
           {"uuid": "\(uuid(Chat.receive))", "flags": ["write", "write-without-response"]},
           {"uuid": "\(uuid(Chat.send))", "flags": ["notify"]},
           {"uuid": "\(uuid(ticker))", "flags": ["read", "notify"], "value": "00"}]}],
         "rules": [{"on": {"write": "\(uuid(Chat.receive))", "prefix": "01"}, "then": [{"notify": "\(uuid(Chat.send))", "value": "\(hex)", "packets": 4}]},
                   {"on": {"every": 150}, "then": [{"notify": "\(uuid(ticker))", "value": "beef"}]}]}
        """
    }

    @Test func servingProcessAndCentralProcessRunTheWholeFlowAndPairThroughBothAgents() async throws {
        let blekit = try #require(Subprocess.builtProduct("blekit"), "blekit is built next to the test bundle")
        let fixture = try await SimulatorFixture.start()
        defer { fixture.tearDown() }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("blekit-flow-\(UUID().uuidString).json")
        try Data(Self.servedFile.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }

        // Process A: serves, advertises and answers pairing questions (DisplayYesNo, --yes).
        let server = try Subprocess([blekit, "serve", file.path, "--bus", fixture.bus.address, "--adapter", "hci0",
                                     "--agent", "DisplayYesNo", "--yes"], environment: fixture.bus.environment)
        var cursor = 0
        func expectServer(_ text: String, timeout: Double = 15, sourceLocation: SourceLocation = #_sourceLocation) async throws {
            guard let end = await server.waitFor(text, from: cursor, timeout: timeout) else {
                Issue.record("blekit serve did not print \"\(text)\"; its output:\n\(server.text)", sourceLocation: sourceLocation)
                throw PeripheralTestError.missing(text)
            }
            cursor = end
        }
        defer { server.signal(SIGKILL) }
        try await expectServer("serving flow-periph on hci0: 12345678-1234-1234-1234-1234567890AB; advertising; pairing agent DisplayYesNo (default agent)")

        // Process B (this one): the DSL's central on the other adapter.
        let central = CentralStack(busAddress: fixture.bus.address)
        defer { central.tearDown() }
        try await central.connect(name: "flow-periph")
        #expect(central.centralManager.adapterName == "hci1", "the central leaves the advertising adapter to the peripheral")
        try await expectServer("central 00:AA:01:00:00:01 connected")
        try await expectServer("central 00:AA:01:00:00:01 subscribed to 12345678-1234-1234-1234-1234567890AD")

        // A command and its multi-packet answer.
        let packets = try await central.run(CollectCommand(cmdData: Data([0x01, 0x02]), packets: 4)).get()
        #expect(packets.count == 4)
        #expect(packets.reduce(Data(), +) == Self.response)
        try await expectServer("write 12345678-1234-1234-1234-1234567890AC by 00:AA:01:00:00:01 ← 01 02")

        // Notifications of a characteristic the DSL does not use, subscribed with BleCore.
        let peripheral = try #require(central.device.peripheral)
        let listener = NotificationListener()
        peripheral.multiDelegate.addDelegate(listener)
        let service = try #require(peripheral.services?.first { $0.uuid == Chat.service })
        peripheral.discoverCharacteristics([Self.ticker], for: service)
        try await listener.events.wait("ticker discovered", timeout: .seconds(10)) { $0.contains("discovered") }
        let ticker = try #require(service.characteristics?.first { $0.uuid == Self.ticker })
        peripheral.setNotifyValue(true, for: ticker)
        try await listener.events.wait("two ticker notifications", timeout: .seconds(10)) { events in
            events.filter { $0 == "value beef" }.count >= 2
        }
        #expect(ticker.isNotifying)
        try await expectServer("subscribed to 12345678-1234-1234-1234-1234567890AF")

        // Pairing: the central's own agent and the serving process's default agent.
        let answers = EventRecorder<String>()
        let agentDelegate = ConfirmingAgent(answers)
        let agent = PairingAgent(central: central.centralManager, capability: .displayYesNo, delegate: agentDelegate)
        agent.start()
        defer { agent.stop() }
        try await answers.wait("the central's agent registered", timeout: .seconds(10)) { $0.contains("registered") }
        #expect(!peripheral.isPaired)
        peripheral.pair(timeout: .seconds(30)) { error in answers.appendFromAnyThread("paired \(error.map { "\($0)" } ?? "ok")") }
        try await answers.wait("pair() result", timeout: .seconds(40)) { $0.contains { $0.hasPrefix("paired") } }
        #expect(answers.events.contains("paired ok"), "\(answers.events)")
        let asked = answers.events.compactMap { $0.hasPrefix("confirm ") ? String($0.dropFirst(8)) : nil }
        #expect(asked.count == 1, "the central's agent is asked once: \(answers.events)")
        let passkey = try #require(asked.first)
        #expect(passkey.count == 6 && passkey.allSatisfy(\.isNumber))
        // The serving process printed the same passkey, asked about the central.
        try await expectServer("Does 00:AA:01:00:00:01 show \(passkey)? yes (--yes)")
        #expect(peripheral.isPaired && peripheral.isBonded)
        try await fixture.waitForProperty("/org/bluez/hci0/dev_00_AA_01_00_00_01", "Paired", .boolean(true))

        // Process A stops cleanly on Ctrl-C with its verdict.
        server.signal(SIGINT)
        try await expectServer("stopped (interrupted)")
        #expect(await server.waitForEnd(timeout: 10))
        _ = agentDelegate
        _ = listener
    }
}

extension TwoProcessFlowTests {
    @Test func serveRefusesAnUnknownAgentCapability() async throws {
        let blekit = try #require(Subprocess.builtProduct("blekit"), "blekit is built next to the test bundle")
        let errors = FileManager.default.temporaryDirectory.appendingPathComponent("blekit-serve-agent-\(UUID().uuidString).txt").path
        defer { try? FileManager.default.removeItem(atPath: errors) }
        let child = try ChildProcess(arguments: [blekit, "serve", "/nonexistent.json", "--agent", "Telepathy"], standardErrorPath: errors)
        let (status, _) = await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: child.runToCompletion(timeout: 30)) }
        }
        let output = (try? String(contentsOfFile: errors, encoding: .utf8)) ?? ""
        #expect(status == 2, "\(output)")
        #expect(output.contains("--agent: 'Telepathy' is not one of DisplayOnly, DisplayYesNo"), "\(output)")
    }
}

/// Records discoveries and notified values of one peripheral (on the loop, no queue).
final class NotificationListener: PeripheralDelegate, Sendable {
    let events: EventRecorder<String>
    @BleLoop init() { events = EventRecorder<String>() }
    func peripheral(_ peripheral: Peripheral, didDiscoverCharacteristicsFor service: Service, error: Error?) {
        events.appendFromAnyThread(error.map { "discover failed \($0)" } ?? "discovered")
    }
    func peripheral(_ peripheral: Peripheral, didUpdateValueFor characteristic: Characteristic, error: Error?) {
        guard characteristic.uuid == TwoProcessFlowTests.ticker else { return }
        let value = characteristic.value.map { $0.map { String(format: "%02x", $0) }.joined() } ?? "nil"
        events.appendFromAnyThread("value \(value)")
    }
}

/// The central's agent: accepts a numeric comparison and records the passkey it was shown.
final class ConfirmingAgent: PairingAgentDelegate, Sendable {
    let answers: EventRecorder<String>
    init(_ answers: EventRecorder<String>) { self.answers = answers }
    func pairingAgent(_ agent: PairingAgent, didRegister error: Error?) {
        answers.appendFromAnyThread(error.map { "refused \($0)" } ?? "registered")
    }
    func pairingAgent(_ agent: PairingAgent, didReceive request: PairingRequest) {
        if case .confirmation(let passkey) = request.kind {
            answers.appendFromAnyThread("confirm \(String(format: "%06u", passkey))")
            request.accept()
        } else {
            answers.appendFromAnyThread("unexpected \(request.kind)")
            request.reject()
        }
    }
}
