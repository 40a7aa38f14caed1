import BleDBus
import BleDSL
import BleSim
import BleTestSupport
import Foundation
import Testing

/// iOS-shaped delegate written as on iOS: `[String: Any]` and `NSNumber`, nothing else.
final class IOSShapedDelegate: CentralManagerDelegate, PeripheralDelegate, @unchecked Sendable {
    let discoveries = BleLoop.assumeIsolated { EventRecorder<String>() }
    let rssiReads = BleLoop.assumeIsolated { EventRecorder<String>() }
    let seen = BleLoop.assumeIsolated { EventRecorder<Peripheral>() }

    func centralManagerDidUpdateState(_ central: CBCentralManager) {
        if central.state == .poweredOn { central.scanForPeripherals(withServices: [CBUUID(string: "FFE0")], options: nil) }
    }

    func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral, advertisementData: [String: Any], rssi RSSI: NSNumber) {
        let name = advertisementData[CBAdvertisementDataLocalNameKey] as? String ?? "?"
        let services = advertisementData[CBAdvertisementDataServiceUUIDsKey] as? [CBUUID] ?? []
        discoveries.appendFromAnyThread("\(name) \(RSSI.intValue) \(services)")
        seen.appendFromAnyThread(peripheral)
    }

    func peripheral(_ peripheral: CBPeripheral, didReadRSSI RSSI: NSNumber, error: Error?) {
        rssiReads.appendFromAnyThread("\(RSSI.intValue) \(error.map { "\($0)" } ?? "ok")")
    }
}

/// Issue 11, items 1 and 2: CoreBluetooth's constants, signatures and descriptions.
@BleLoop
@Suite(.timeLimit(.minutes(TestTime.minutes(1))))
struct CoreBluetoothShapeTests {
    @Test func coreBluetoothKeysExistWithCoreBluetoothsValues() {
        #expect(CBCentralManagerOptionRestoreIdentifierKey == "kCBInitOptionRestoreIdentifier")
        #expect(CBCentralManagerScanOptionAllowDuplicatesKey == "kCBScanOptionAllowDuplicates")
        #expect(CBCentralManagerRestoredStatePeripheralsKey == "kCBRestoredPeripherals")
        #expect(CBAdvertisementDataLocalNameKey == "kCBAdvDataLocalName")
        #expect(CBAdvertisementDataOverflowServiceUUIDsKey == "kCBAdvDataHashedServiceUUIDs")
        #expect(CBAdvertisementDataSolicitedServiceUUIDsKey == "kCBAdvDataSolicitedServiceUUIDs")
        #expect(ScanOptions(dictionary: [CBCentralManagerScanOptionAllowDuplicatesKey: true]).allowDuplicates)
    }

    @Test func theRestoreIdentifierKeyTurnsOnRestoration() {
        #expect(CentralManagerOptions.defaults(applying: [CBCentralManagerOptionRestoreIdentifierKey: "com.example.ble"]).restoreConnectedPeripherals)
        #expect(!CentralManagerOptions.defaults(applying: nil).restoreConnectedPeripherals)
    }

    @Test func theIOSDidDiscoverSignatureIsCalled() async throws {
        let fixture = try await SimulatorFixture.start(peripherals: [Device.spec()])
        defer { fixture.tearDown() }
        let delegate = IOSShapedDelegate()
        let central = CBCentralManager(delegate: delegate, queue: nil, options: CentralManagerOptions(bus: .address(fixture.bus.address)))
        defer { central.close() }
        try await delegate.discoveries.wait(count: 1)
        #expect(delegate.discoveries.events[0] == "MyDevice-01 -42 [FFE0]")
    }

    @Test func theIOSDidReadRSSISignatureIsCalled() async throws {
        let fixture = try await SimulatorFixture.start(peripherals: [Device.spec()])
        defer { fixture.tearDown() }
        let delegate = IOSShapedDelegate()
        let central = CBCentralManager(delegate: delegate, queue: nil, options: CentralManagerOptions(bus: .address(fixture.bus.address)))
        defer { central.close() }
        try await delegate.seen.wait(count: 1)
        let peripheral = delegate.seen.events[0]
        peripheral.delegate = delegate
        peripheral.readRSSI()
        try await delegate.rssiReads.wait(count: 1)
        #expect(delegate.rssiReads.events == ["-42 ok"])
    }

    @Test func descriptionsPrintLikeCoreBluetooth() async throws {
        let stack = try await Stack.start()
        defer { stack.tearDown() }
        try await stack.connect()
        let peripheral = try #require(stack.device.peripheral)
        #expect("\(peripheral)".hasPrefix("<Peripheral: 0x"))
        #expect("\(peripheral)".contains("identifier = \(peripheral.identifier.uuidString), name = MyDevice-01, mtu = 185, state = connected>"))
        let service = try #require(peripheral.services?.first { $0.uuid == CBUUID(string: "FFE0") })
        #expect("\(service)".hasSuffix(", isPrimary = YES, UUID = FFE0>"))
        let write = try #require(stack.characteristic.writeCharacteristic)
        #expect("\(write)".contains("UUID = FFE1, properties = 0xC [writeWithoutResponse, write], value = "))
        #expect("\(write)".hasSuffix(", notifying = NO>"))
        #expect("\(CharacteristicProperties([.read, .notify]))" == "[read, notify]")
        #expect("\(CBUUID(string: "ffe0"))" == "FFE0")
        #expect("\(CBUUID(string: "6e400001-b5a3-f393-e0a9-e50e24dcca9e"))" == "6E400001-B5A3-F393-E0A9-E50E24DCCA9E")
    }

    @Test func errorsLocalizedDescriptionSaysWhatTheirDescriptionSays() {
        let errors: [Error] = [BleError.disconnected, BleError.att(.insufficientAuthentication), BleManagerError.scanTimeout(seconds: 3),
                               PeripheralCommandError.timeout(seconds: 2), MissingAttribute.service(CBUUID(string: "FFE0"))]
        for error in errors {
            #expect(error.localizedDescription == "\(error)")
            #expect(!error.localizedDescription.contains("The operation could not be completed"))
        }
    }

    @Test func aTrailingClosureOnExecutableMeansCompletionWithEveryPacket() async throws {
        let stack = try await Stack.start()
        defer { stack.tearDown() }
        try await stack.connect()
        let counts = EventRecorder<Int>()
        // FXBlueTooth's README spelling: "ambiguous use of 'executable'" before; now `completion:`.
        stack.engine.executable(option: OpcodeCommand(opcode: 0xBB, packets: 3)) { result in
            if case .success(let packets) = result { counts.appendFromAnyThread(packets.count) }
        }
        try await counts.wait(count: 1)
        #expect(counts.events == [3])
    }
}
