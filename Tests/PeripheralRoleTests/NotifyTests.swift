import BleCore
import BleDBus
import BleSim
import BleTestSupport
import Foundation
import Testing

/// Through the bus (`PropertiesChanged`): updateValue refuses beyond the window and the
/// delegates hear `isReady` once bluetoothd has read what was sent.
@BleLoop
@Test func notificationsThroughTheBusAreFlowControlledAndReachTheCentral() async throws {
    let harness = try await PeripheralHarness.start(acquireSockets: false, window: 2)
    defer { harness.tearDown() }
    let (service, _, send) = PeripheralHarness.chatService()
    try await harness.add(service)
    let advertisement = try await harness.advertise()
    defer { advertisement.cancel() }
    let device = try await harness.connectRawCentral()
    let path = try ObjectPath(device.rawValue + "/service0015/char0018")
    #expect(harness.manager.updateValue(Data([0]), for: send, onSubscribedCentrals: nil), "no subscriber: nothing to send")
    let mark = harness.fixture.mark
    try await harness.fixture.call(path, "org.bluez.GattCharacteristic1", "StartNotify")
    try await harness.recorder.events.wait("subscribed", timeout: .seconds(10)) { $0.contains { $0.hasPrefix("subscribed") } }
    // StartNotify does not name the central; the only connected one is taken.
    #expect(harness.recorder.events.events.contains("subscribed \(Chat.send) 00:AA:01:00:00:01"))

    #expect(harness.manager.updateValue(Data([1]), for: send, onSubscribedCentrals: nil))
    #expect(harness.manager.updateValue(Data([2]), for: send, onSubscribedCentrals: nil))
    #expect(!harness.manager.updateValue(Data([3]), for: send, onSubscribedCentrals: nil), "the window of 2 is full")
    try await harness.recorder.events.wait("ready", timeout: .seconds(10)) { $0.contains("ready") }
    #expect(harness.manager.updateValue(Data([3]), for: send, onSubscribedCentrals: nil))
    for value in [1, 2, 3] as [UInt8] {
        try await harness.fixture.waitForSignal(since: mark, "notification \(value)") {
            $0.path == path && SimulatorFixture.changedValue($0, "Value") == .bytes(Data([value]))
        }
    }
    // A subset of the subscribers cannot be addressed on bluetoothd 5.66: refused, not widened.
    #expect(!harness.manager.updateValue(Data([4]), for: send, onSubscribedCentrals: []))

    try await harness.fixture.call(path, "org.bluez.GattCharacteristic1", "StopNotify")
    try await harness.recorder.events.wait("unsubscribed", timeout: .seconds(10)) { $0.contains { $0.hasPrefix("unsubscribed") } }
}

/// Through an `AcquireNotify` socket: updateValue returns false when the socket is full and
/// `isReady` follows once bluetoothd has drained it.
@BleLoop
@Test func notificationsThroughTheAcquiredSocketReturnFalseWhenFullAndResume() async throws {
    let harness = try await PeripheralHarness.start()
    defer { harness.tearDown() }
    let (service, _, send) = PeripheralHarness.chatService()
    try await harness.add(service)
    let advertisement = try await harness.advertise()
    defer { advertisement.cancel() }
    let device = try await harness.connectRawCentral()
    let path = try ObjectPath(device.rawValue + "/service0015/char0018")
    try await harness.fixture.call(path, "org.bluez.GattCharacteristic1", "StartNotify")
    try await harness.recorder.events.wait("subscribed", timeout: .seconds(10)) { $0.contains { $0.hasPrefix("subscribed") } }
    var sent = 0
    // Nothing drains the socket while this loop holds the loop thread: it fills up.
    while harness.manager.updateValue(Data(repeating: UInt8(sent & 0xff), count: 200), for: send, onSubscribedCentrals: nil) {
        sent += 1
        if sent > 100_000 { break }
    }
    #expect(sent > 0 && sent <= 100_000)
    try await harness.recorder.events.wait("ready", timeout: .seconds(10)) { $0.contains("ready") }
    #expect(harness.manager.updateValue(Data([0xAA]), for: send, onSubscribedCentrals: nil))
    try await harness.fixture.waitForSignal("the last notification") {
        $0.path == path && SimulatorFixture.changedValue($0, "Value") == .bytes(Data([0xAA]))
    }
}

/// An indicate-only characteristic: one indication at a time, the next after the central's confirmation.
@BleLoop
@Test func indicationsWaitForTheCentralsConfirmation() async throws {
    let harness = try await PeripheralHarness.start()
    defer { harness.tearDown() }
    let service = MutableService(type: Chat.service, primary: true)
    let indicate = MutableCharacteristic(type: Chat.send, properties: [.indicate], value: nil, permissions: [.readable])
    service.characteristics = [indicate]
    try await harness.add(service)
    let advertisement = try await harness.advertise()
    defer { advertisement.cancel() }
    let device = try await harness.connectRawCentral()
    let path = try ObjectPath(device.rawValue + "/service0015/char0016")
    try await harness.fixture.call(path, "org.bluez.GattCharacteristic1", "StartNotify")
    try await harness.recorder.events.wait("subscribed", timeout: .seconds(10)) { $0.contains { $0.hasPrefix("subscribed") } }
    #expect(harness.manager.updateValue(Data([1]), for: indicate, onSubscribedCentrals: nil))
    #expect(!harness.manager.updateValue(Data([2]), for: indicate, onSubscribedCentrals: nil), "waits for the confirmation")
    try await harness.recorder.events.wait("confirmed, ready", timeout: .seconds(10)) { $0.contains("confirmed \(Chat.send)") && $0.contains("ready") }
    #expect(harness.manager.updateValue(Data([2]), for: indicate, onSubscribedCentrals: nil))
}

/// Centrals are objects: connect and disconnect events from the serving adapter's `Device1`.
@BleLoop
@Test func centralsConnectAndDisconnectAsObjects() async throws {
    let harness = try await PeripheralHarness.start()
    defer { harness.tearDown() }
    let (service, _, _) = PeripheralHarness.chatService()
    try await harness.add(service)
    let advertisement = try await harness.advertise()
    defer { advertisement.cancel() }
    let device = try await harness.connectRawCentral()
    try await harness.recorder.events.wait("connected", timeout: .seconds(10)) { $0.contains("connected 00:AA:01:00:00:01") }
    let central = try #require(harness.manager.connectedCentrals.first)
    #expect(central.devicePath == "/org/bluez/hci0/dev_00_AA_01_00_00_01")
    #expect(central.isConnected)
    try await harness.fixture.call(device, "org.bluez.Device1", "Disconnect")
    try await harness.recorder.events.wait("disconnected", timeout: .seconds(10)) { $0.contains("disconnected 00:AA:01:00:00:01") }
    #expect(!central.isConnected)
    #expect(harness.manager.connectedCentrals.isEmpty)
}
