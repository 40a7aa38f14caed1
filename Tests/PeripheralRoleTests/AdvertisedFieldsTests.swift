import BleCore
import BleDBus
import BleSim
import BleTestSupport
import Foundation
import Testing

/// Appearance, solicit UUIDs and `Data` of a `PeripheralManager` advertisement, through BleSim
/// to centrals on the other adapter: BleKit's central and bluetoothctl see the appearance (and
/// the icon bluetoothd derives from it); neither sees the solicit UUIDs nor the `Data`, because
/// bluetoothd 5.66 shows them nowhere on D-Bus (recorded: `advertising.fieldsAndFit`).
@BleLoop
@Suite(.serialized) struct AdvertisedFieldsTests {
    static func advertisement() -> Advertisement {
        var advertisement = Advertisement(localName: "fields-periph", serviceUUIDs: [BluetoothUUID(UInt16(0x180F))])
        advertisement.solicitUUIDs = [BluetoothUUID(UInt16(0x1812))]
        advertisement.appearance = 0x03C1
        advertisement.data = [0x26: Data([0x01, 0x01, 0x00])]
        return advertisement
    }

    @Test func aBleKitCentralSeesTheAppearanceAndNotTheSolicitUUIDs() async throws {
        let harness = try await PeripheralHarness.start()
        defer { harness.tearDown() }
        let registration = harness.manager.startAdvertising(Self.advertisement())
        defer { registration.cancel() }
        try await harness.recorder.events.wait("advertising", timeout: .seconds(10)) { $0.contains { $0.hasPrefix("advertising") } }
        #expect(registration.state == .active)

        let seen = EventRecorder<AdvertisementData>()
        let scanner = Scanner { seen.appendFromAnyThread($0) }
        let central = CentralManager(delegate: scanner, queue: nil, options: CentralManagerOptions(bus: .address(harness.fixture.bus.address), adapter: "hci1"))
        defer { central.close() }
        try await seen.wait("poweredOn", timeout: .seconds(10)) { _ in central.state == .poweredOn }
        central.scanForPeripherals(withServices: nil)
        try await seen.wait("fields-periph", timeout: .seconds(10)) { $0.contains { $0.localName == "fields-periph" } }
        central.stopScan()
        let data = try #require(seen.events.last { $0.localName == "fields-periph" })
        #expect(data.appearance == 0x03C1)
        #expect(data.serviceUUIDs == [BluetoothUUID(UInt16(0x180F))], "solicit UUIDs are not advertised services")
        let device: ObjectPath = "/org/bluez/hci1/dev_00_AA_01_00_00_00"
        #expect(try await harness.fixture.property(device, "org.bluez.Device1", "Icon") == .string("input-keyboard"))
        _ = scanner
    }

    @Test func bluetoothctlShowsTheAppearanceAndIcon() async throws {
        let bluetoothctl = "/usr/bin/bluetoothctl"
        #expect(FileManager.default.isExecutableFile(atPath: bluetoothctl), "Debian's bluez package provides bluetoothctl")
        let harness = try await PeripheralHarness.start()
        defer { harness.tearDown() }
        let registration = harness.manager.startAdvertising(Self.advertisement())
        defer { registration.cancel() }
        try await harness.recorder.events.wait("advertising", timeout: .seconds(10)) { $0.contains { $0.hasPrefix("advertising") } }
        let process = try Subprocess([bluetoothctl], environment: harness.fixture.bus.environment)
        defer { process.send("quit") }
        var cursor = 0
        func run(_ command: String?, expecting reply: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
            if let command { process.send(command) }
            guard let end = await process.waitFor(reply, from: cursor, timeout: 10) else {
                Issue.record("bluetoothctl did not print \"\(reply)\"; its output:\n\(process.text)", sourceLocation: sourceLocation)
                throw PeripheralTestError.missing(reply)
            }
            cursor = end
        }
        try await run(nil, expecting: "Agent registered")
        try await run("select 00:AA:01:00:00:01", expecting: "Controller 00:AA:01:00:00:01 BleSim [default]")
        try await run("scan on", expecting: "[NEW] Device 00:AA:01:00:00:00 fields-periph")
        try await run("scan off", expecting: "Discovery stopped")
        let infoStart = cursor
        try await run("info 00:AA:01:00:00:00", expecting: "Appearance: 0x03c1")
        cursor = infoStart
        try await run(nil, expecting: "Icon: input-keyboard")
        let info = String(process.text.dropFirst(infoStart))
        #expect(!info.contains("00001812"), "no solicit UUID in bluetoothctl's info:\n\(info)")
        #expect(!info.contains("AdvertisingData"), "no Data in bluetoothctl's info:\n\(info)")
    }

    /// The 31-byte check: what bluetoothd 5.66 accepted and refused in the VM, and its error.
    @Test(arguments: [(14, false, false, true), (15, false, false, false), (11, true, false, true), (12, true, false, false),
                      (11, false, true, true), (12, false, true, false)])
    func bleSimAcceptsAndRefusesWhatBluetoothdDid(_ manufacturerBytes: Int, _ discoverable: Bool, _ txPower: Bool, _ accepted: Bool) async throws {
        let harness = try await PeripheralHarness.start()
        defer { harness.tearDown() }
        var advertisement = Advertisement(localName: "blekit-fit")
        advertisement.solicitUUIDs = [BluetoothUUID(UInt16(0x1812))]
        advertisement.appearance = 0x03C1
        advertisement.data = [0x26: Data([0x01, 0x01, 0x00])]
        advertisement.manufacturerData = [0xFFFF: Data(repeating: 0x5A, count: manufacturerBytes)]
        if discoverable { advertisement.discoverable = true }
        advertisement.includeTxPower = txPower
        let registration = harness.manager.startAdvertising(advertisement)
        defer { registration.cancel() }
        try await harness.recorder.events.wait("answer", timeout: .seconds(10)) { $0.contains { $0.hasPrefix("advertising") } }
        if accepted {
            #expect(registration.state == .active)
        } else {
            guard case .failed(let error) = registration.state else {
                Issue.record("expected a refusal, got \(registration.state)")
                return
            }
            #expect("\(error)".contains("Failed to register advertisement"), "bluetoothd answers Failed, not InvalidLength: \(error)")
        }
    }
}

/// Hands every discovery's advertisement data, and state changes, to `seen`.
final class Scanner: CentralManagerDelegate, Sendable {
    let seen: @Sendable (AdvertisementData) -> Void
    init(_ seen: @escaping @Sendable (AdvertisementData) -> Void) { self.seen = seen }
    func centralManagerDidUpdateState(_ central: CentralManager) { seen(AdvertisementData()) }
    func centralManager(_ central: CentralManager, didDiscover peripheral: Peripheral, advertisementData: AdvertisementData, rssi: Int) {
        seen(advertisementData)
    }
}
