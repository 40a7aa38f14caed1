import BleCore
import BleDBus
import BleSim
import BleTestSupport
import Foundation
import Testing
import BlueZVocabulary

/// `dbus-send` from another process, which does not own `org.bluez`, calls the exported
/// objects; each call is refused with `NotAuthorized` and changes nothing.
@BleLoop
@Test func callsFromAProcessThatIsNotBluetoothdAreRefused() async throws {
    let harness = try await PeripheralHarness.start()
    defer { harness.tearDown() }
    let (service, _, _) = PeripheralHarness.chatService()
    try await harness.add(service)
    let advertisement = try await harness.advertise()
    defer { advertisement.cancel() }
    let owner = try #require(harness.manager.dbusConnection?.uniqueName)
    let notify = try harness.exportedPath("/service0000/char0001")

    func dbusSend(_ path: String, _ method: String) async -> (ended: Bool, output: String) {
        // Subprocess merges stderr, where dbus-send prints the error reply.
        guard let process = try? Subprocess(["/usr/bin/dbus-send", "--system", "--print-reply", "--dest=\(owner)", path, method],
                                            environment: harness.fixture.bus.environment) else {
            return (false, "could not start dbus-send")
        }
        let ended = await process.waitForEnd(timeout: 10)
        await process.finish()
        return (ended, process.text)
    }
    let start = await dbusSend(notify.rawValue, "org.bluez.GattCharacteristic1.StartNotify")
    #expect(start.ended)
    #expect(start.output.contains("org.bluez.Error.NotAuthorized"), "\(start.output)")
    let release = await dbusSend(advertisement.path, "org.bluez.LEAdvertisement1.Release")
    #expect(release.output.contains("org.bluez.Error.NotAuthorized"), "\(release.output)")
    let tree = await dbusSend(notify.parent?.parent?.rawValue ?? "/", "org.freedesktop.DBus.ObjectManager.GetManagedObjects")
    #expect(tree.output.contains("org.bluez.Error.NotAuthorized"), "\(tree.output)")

    // Nothing changed: no subscription, the advertisement is still registered.
    _ = try await harness.fixture.client.call(destination: owner, path: "/", interface: "org.freedesktop.DBus.Peer", member: "Ping")
    #expect(!harness.recorder.events.events.contains { $0.hasPrefix("subscribed") })
    #expect(advertisement.state == .active)
    #expect(try await harness.fixture.property("/org/bluez/hci0", "org.bluez.LEAdvertisingManager1", "ActiveInstances") == .byte(1))
}

/// bluetoothd restarting forgets applications and advertisements; the manager registers both
/// again by itself when the daemon is back.
@BleLoop
@Test func afterABluetoothdRestartTheApplicationAndAdvertisementAreRegisteredAgain() async throws {
    let harness = try await PeripheralHarness.start()
    defer { harness.tearDown() }
    let (service, _, _) = PeripheralHarness.chatService()
    try await harness.add(service)
    let advertisement = try await harness.advertise()
    defer { advertisement.cancel() }
    let events = harness.recorder.events
    let before = events.events.count

    try await harness.fixture.simulator.restart(.clean, on: harness.fixture.bus.busAddress)
    try await events.wait("resetting, then registered again", timeout: .seconds(10)) { all in
        let later = all.dropFirst(before)
        return later.contains("state resetting") && later.contains("advertisement active")
    }
    #expect(advertisement.state == .active)
    #expect(try await harness.fixture.property("/org/bluez/hci0", "org.bluez.LEAdvertisingManager1", "ActiveInstances") == .byte(1))
    // The application too: its service is in the adapter's UUIDs and a central can use it.
    let device = try await harness.connectRawCentral()
    let name = try await harness.fixture.call(try ObjectPath(device.rawValue + "/service0015/char001b"), "org.bluez.GattCharacteristic1",
                                              "ReadValue", [BlueZShapes.propertyDictionary([])])
    #expect(name == [.bytes(Data("chat".utf8))])
}
