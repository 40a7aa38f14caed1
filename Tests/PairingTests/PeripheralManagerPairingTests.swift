@testable import BleCore
import BleDBus
import BleSim
import BleTestSupport
import Foundation
import Testing

/// The issue's done-when, pairing part: a `PeripheralManager` serves and advertises on one bus
/// connection, a `CentralManager` finds it on another, and `pair()` runs numeric comparison
/// through both connections' `PairingAgent`s.
@BleLoop
struct PeripheralManagerPairingTests {
    final class Serving: PeripheralManagerDelegate, @unchecked Sendable {
        let events: EventRecorder<String>
        @BleLoop init() { events = EventRecorder<String>() }
        func peripheralManagerDidUpdateState(_ peripheral: PeripheralManager) {
            BleLoop.assumeIsolated { events.append("state \(peripheral.state)") }
        }
        func peripheralManager(_ peripheral: PeripheralManager, didAdd service: Service, error: Error?) {
            BleLoop.assumeIsolated { events.append("added \(error.map { "\($0)" } ?? "ok")") }
        }
        func peripheralManagerDidStartAdvertising(_ peripheral: PeripheralManager, error: Error?) {
            BleLoop.assumeIsolated { events.append("advertising \(error.map { "\($0)" } ?? "ok")") }
        }
    }

    @Test func aPeripheralManagerAndACentralPairThroughTheirOwnAgents() async throws {
        let bench = try await PairingBench.start()
        defer { bench.tearDown() }
        let serving = Serving()
        let manager = PeripheralManager(delegate: serving, queue: nil,
                                        options: PeripheralManagerOptions(bus: .address(bench.busAddress), adapter: "hci0"))
        defer { manager.close() }
        try await serving.events.wait("poweredOn", timeout: .seconds(10)) { $0.contains("state poweredOn") }
        let service = MutableService(type: BluetoothUUID(string: "abc0"), primary: true)
        service.characteristics = [MutableCharacteristic(type: BluetoothUUID(string: "abc1"), properties: [.read],
                                                         value: Data([0x2a]), permissions: [.readEncryptionRequired])]
        manager.add(service)
        try await serving.events.wait("service added", timeout: .seconds(10)) { $0.contains("added ok") }
        let registration = manager.startAdvertising(Advertisement(localName: "locked", serviceUUIDs: [BluetoothUUID(string: "abc0")]))
        defer { registration.cancel() }
        try await serving.events.wait("advertising", timeout: .seconds(10)) { $0.contains("advertising ok") }

        let servingListener = AgentListener("serving", bench.recorder)
        bench.recorder.answer["serving"] = { $0.accept() }
        let servingAgent = PairingAgent(peripheralManager: manager, capability: .displayYesNo, delegate: servingListener)
        let mark = bench.recorder.mark
        servingAgent.start()
        defer { servingAgent.stop() }
        try await bench.recorder.waitRegistered("serving", since: mark)
        _ = try await bench.centralAgent(.displayYesNo) { $0.accept() }

        let peripheral = try await bench.discover(TwoSidedPairingTests.appAddress)
        let before = bench.recorder.mark
        #expect(try await bench.pair(peripheral) == nil)
        guard case .confirmation(let a)? = bench.recorder.requests("central", since: before).first?.kind,
              case .confirmation(let b)? = bench.recorder.requests("serving", since: before).first?.kind else {
            Issue.record("both agents should confirm: \(bench.recorder.events)")
            return
        }
        #expect(a == b)
        #expect(peripheral.isPaired && peripheral.isBonded)
        withExtendedLifetime(servingListener) {}
    }
}
