import BleCore
import BleDBus
import BleDSL
import BleSim
import BleTestSupport
import Foundation
import Testing

/// The done-when of the peripheral role: one connection serves and advertises through
/// `PeripheralManager`, another (a second client, as a second process would be) finds it with
/// the DSL's `BleManager`, connects, subscribes, writes a command and gets a multi-packet
/// response through `DeviceCharacteristicValue`.
@BleLoop
@Test func aPeripheralManagerIsFoundConnectedAndAnswersADSLCommandInSeveralPackets() async throws {
    let harness = try await PeripheralHarness.start()
    defer { harness.tearDown() }
    let (service, _, send) = PeripheralHarness.chatService()
    let response = Data((0..<64).map { UInt8($0) })
    harness.recorder.onWrite = { peripheral, request in
        peripheral.respond(to: request, withResult: .success)
        guard request.value?.first == 0x01 else { return }
        // Four packets of 16 bytes: a response longer than one notification.
        for start in stride(from: 0, to: response.count, by: 16) {
            #expect(peripheral.updateValue(Data(response[start..<start + 16]), for: send, onSubscribedCentrals: nil))
        }
    }
    try await harness.add(service)
    let advertisement = try await harness.advertise()
    defer { advertisement.cancel() }

    let central = CentralStack(busAddress: harness.fixture.bus.address)
    defer { central.tearDown() }
    try await central.connect()
    // Two roles on one machine: the central left the advertising adapter to the peripheral.
    #expect(central.centralManager.adapterName == "hci1")
    #expect(harness.manager.adapterName == "hci0")
    try await harness.recorder.events.wait("connected and subscribed", timeout: .seconds(10)) { events in
        events.contains("connected 00:AA:01:00:00:01") && events.contains { $0.hasPrefix("subscribed \(Chat.send)") }
    }
    #expect(harness.manager.connectedCentrals.map(\.address) == ["00:AA:01:00:00:01"])
    #expect(send.subscribedCentrals?.map(\.address) == ["00:AA:01:00:00:01"], "AcquireNotify names the central")

    let result = try await central.run(CollectCommand(cmdData: Data([0x01, 0x02]), packets: 4))
    let packets = try result.get()
    #expect(packets.count == 4)
    #expect(packets.reduce(Data(), +) == response)
    #expect(harness.recorder.writes.first?.value == Data([0x01, 0x02]))
    // The DSL writes without response where it may: through the AcquireWrite socket, which needs no answer.
    #expect(harness.recorder.writes.first?.needsResponse == false)
}

/// A central told to scan on the adapter that advertises says so, instead of finding nothing silently.
@BleLoop
@Test func aCentralScanningOnTheAdvertisingAdapterSaysSo() async throws {
    let harness = try await PeripheralHarness.start()
    defer { harness.tearDown() }
    let advertisement = try await harness.advertise()
    defer { advertisement.cancel() }
    let central = CentralStack(busAddress: harness.fixture.bus.address, adapter: "hci0")
    defer { central.tearDown() }
    let manager = central.centralManager
    let ready = EventRecorder<Bool>()
    let watcher = StateWatcher { ready.appendFromAnyThread(true) }
    manager.multiDelegate.addDelegate(watcher)
    try await ready.wait("poweredOn", timeout: .seconds(10)) { _ in manager.state == .poweredOn }
    #expect(manager.adapterName == "hci0")
    #expect(manager.isScanningAdapterAdvertising)
    _ = watcher
}

/// Calls `changed` on every state update.
final class StateWatcher: CentralManagerDelegate, @unchecked Sendable {
    let changed: () -> Void
    init(_ changed: @escaping () -> Void) { self.changed = changed }
    func centralManagerDidUpdateState(_ central: CentralManager) { changed() }
}
