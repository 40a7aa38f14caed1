import BleCore
import BleDBus
import BleSim
import BleTestSupport
import Foundation
import Testing

@Test func theLegacyBudgetIsCountedAsBluetoothdBuildsIt() {
    // A 128-bit UUID, 1 byte of manufacturer data, 1 byte of 16-bit service data: 28 bytes, no
    // Flags without Discoverable; the name goes to the scan response.
    var advertisement = Advertisement(localName: "golden-periph", serviceUUIDs: [Chat.service])
    advertisement.manufacturerData = [0x0059: Data([1])]
    advertisement.serviceData = [BluetoothUUID(UInt16(0x180d)): Data([5])]
    #expect(advertisement.layout.advertisingBytes == 28)
    #expect(advertisement.layout.fits)
    #expect(advertisement.layout.movedToScanResponse == ["local-name"])
    #expect(advertisement.layout.scanResponseBytes == 15)
    advertisement.includeTxPower = true
    #expect(advertisement.layout.fits, "28 bytes and the kernel's 3 for the TX power fit exactly")
    advertisement.discoverable = true
    #expect(!advertisement.layout.fits)
    let long = Advertisement(localName: String(repeating: "n", count: 40))
    #expect(long.layout.nameShortened)
}

/// What bluetoothd 5.66 accepted and refused in the VM (`advertising.fieldsAndFit`): solicit
/// UUIDs, appearance and `Data` count; Flags only with Discoverable; tx-power takes 3 bytes.
@Test(arguments: [(14, false, false, true), (15, false, false, false), (11, true, false, true), (12, true, false, false),
                  (11, false, true, true), (12, false, true, false)])
func theLayoutAgreesWithWhatBluetoothdAcceptedInTheVM(_ manufacturerBytes: Int, _ discoverable: Bool, _ txPower: Bool, _ accepted: Bool) {
    var advertisement = Advertisement(localName: "blekit-fit")
    advertisement.solicitUUIDs = [BluetoothUUID(UInt16(0x1812))]
    advertisement.appearance = 0x03C1
    advertisement.data = [0x26: Data([0x01, 0x01, 0x00])]
    advertisement.manufacturerData = [0xFFFF: Data(repeating: 0x5A, count: manufacturerBytes)]
    if discoverable { advertisement.discoverable = true }
    advertisement.includeTxPower = txPower
    #expect(advertisement.layout.fits == accepted)
}

@BleLoop
@Test func capabilitiesSeveralAdvertisementsAndHandlesThatUnregisterWhenReleased() async throws {
    let harness = try await PeripheralHarness.start()
    defer { harness.tearDown() }
    let capabilities = try #require(harness.manager.advertisingCapabilities)
    #expect(capabilities.supportedIncludes == ["tx-power", "appearance", "local-name"])
    #expect(capabilities.supportedInstances == 5)
    #expect(capabilities.activeInstances == 0)
    #expect(capabilities.maximumAdvertisingLength == 31)

    var first: AdvertisementRegistration? = harness.manager.startAdvertising(Advertisement(localName: "one", serviceUUIDs: [Chat.service]))
    let second = harness.manager.startAdvertising(Advertisement(localName: "two"))
    try await harness.recorder.events.wait("two active", timeout: .seconds(10)) { $0.filter { $0 == "advertisement active" }.count == 2 }
    #expect(harness.manager.isAdvertising)
    #expect(try await harness.fixture.property("/org/bluez/hci0", "org.bluez.LEAdvertisingManager1", "ActiveInstances") == .byte(2))
    let mark = harness.fixture.mark
    #expect(first?.isActive == true)
    first = nil
    try await harness.fixture.waitForProperty("/org/bluez/hci0", "ActiveInstances", .byte(1), since: mark)
    #expect(second.isActive)

    // Too long for 31 bytes: bluetoothd refuses it, and the handle says why.
    var tooLong = Advertisement(serviceUUIDs: [Chat.service, Chat.receive])
    tooLong.manufacturerData = [0x0059: Data(repeating: 1, count: 8)]
    #expect(!tooLong.layout.fits)
    let refused = harness.manager.startAdvertising(tooLong)
    try await harness.recorder.events.wait("refused", timeout: .seconds(10)) { $0.contains { $0.hasPrefix("advertisement failed") } }
    if case .failed = refused.state {} else { Issue.record("state \(refused.state)") }
    harness.manager.stopAdvertising()
    try await harness.fixture.waitForProperty("/org/bluez/hci0", "ActiveInstances", .byte(0), since: mark)
    #expect(!harness.manager.isAdvertising)
}

/// CoreBluetooth's dictionary form, as the chat seed calls it.
@BleLoop
@Test func coreBluetoothsStartAdvertisingDictionaryWorks() async throws {
    let harness = try await PeripheralHarness.start()
    defer { harness.tearDown() }
    let manager: CBPeripheralManager = harness.manager
    manager.startAdvertising([CBAdvertisementDataServiceUUIDsKey: [Chat.service], CBAdvertisementDataLocalNameKey: "cb"])
    try await harness.recorder.events.wait("advertising", timeout: .seconds(10)) { $0.contains("advertising ok") }
    try await harness.fixture.call("/org/bluez/hci1", "org.bluez.Adapter1", "StartDiscovery")
    let device: ObjectPath = "/org/bluez/hci1/dev_00_AA_01_00_00_00"
    try await harness.fixture.waitForSignal { $0.addedObject == device }
    #expect(try await harness.fixture.property(device, "org.bluez.Device1", "Name") == .string("cb"))
    manager.stopAdvertising()
}

/// `Timeout`: bluetoothd ends the advertisement by itself and calls `Release`; the handle says so.
@BleLoop
@Test func anAdvertisementWithATimeoutIsReleasedByBluetoothd() async throws {
    let harness = try await PeripheralHarness.start()
    defer { harness.tearDown() }
    var advertisement = Advertisement(localName: "brief")
    advertisement.timeout = 1
    let registration = harness.manager.startAdvertising(advertisement)
    try await harness.recorder.events.wait("released", timeout: .seconds(10)) { $0.contains("advertisement released") }
    #expect(registration.state == .released)
    #expect(!harness.manager.isAdvertising)
    #expect(try await harness.fixture.property("/org/bluez/hci0", "org.bluez.LEAdvertisingManager1", "ActiveInstances") == .byte(0))
}
