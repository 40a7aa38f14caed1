import BleDBus
import BleDSL
import BleSim
import BleTestSupport
import Foundation
import Testing

/// The DSL's share of issue 10's symptoms, each named after it.
@BleLoop
@Suite(.timeLimit(.minutes(TestTime.minutes(1))))
struct DataLossSymptomDSLTests {
    // 3. A DeviceCharacteristicValue bound to a peripheral of a queued central trapped on its
    // first event (`assumeIsolated` off the loop).
    @Test func anEngineOnAPeripheralOfAQueuedCentralRunsCommandsWithoutTrapping() async throws {
        let fixture = try await SimulatorFixture.start(peripherals: [Logger.spec()])
        defer { fixture.tearDown() }
        let events = EventRecorder<String>()
        let app = QueuedApp(events: events)
        let queue = DispatchQueue(label: "the app's queue")
        let central = CentralManager(delegate: app, queue: queue,
                                     options: CentralManagerOptions(bus: .address(fixture.bus.address), operationTimeout: .seconds(5)))
        defer { central.close() }
        app.central = central
        try await events.wait("characteristics") { $0.contains("characteristics") }
        let peripheral = try #require(app.peripheral)
        let service = try #require(peripheral.services?.first { $0.uuid == BluetoothUUID(string: Logger.service) })
        let characteristics = service.characteristics ?? []
        let engine = PeripheralDevice.DeviceCharacteristicValue(
            peripheral: peripheral,
            writeCharacteristic: characteristics.first { $0.uuid == BluetoothUUID(string: Logger.write) },
            readCharacteristic: characteristics.first { $0.uuid == BluetoothUUID(string: Logger.notify) })
        let results = EventRecorder<Result<[Data], Error>>()
        for index in 0..<3 {
            engine.executable(option: EchoCommand(cmdData: Data([0x02, UInt8(index)])), completion: { results.appendFromAnyThread($0) })
        }
        try await results.wait(count: 3)
        #expect(results.events.map { $0.value } == [[Data([0x02, 0])], [Data([0x02, 1])], [Data([0x02, 2])]],
                "\(results.events.map { result in result.error.map { "error: \($0)" } ?? "value" })")
    }

    // 4. At MTU 517 the default chunk was 514 bytes, which bluetoothd's server drops: every
    // command over 510 bytes failed. Chunks now never exceed the attribute limit.
    @Test func aLongCommandAtMTU517IsChunkedWithinTheAttributeLimit() async throws {
        let stack = try await DSLStack.start(peripherals: [Logger.spec(mtu: 517)])
        defer { stack.tearDown() }
        try await stack.connect()
        let small = try await stack.run(EchoCommand(cmdData: Data([0x02]) + Data(repeating: 1, count: 299)))
        #expect(small.value?.first?.count == 300, "\(String(describing: small.error))")
        let command = Data([0x02]) + Data(repeating: 0x5a, count: 999)
        let result = try await stack.run(EchoCommand(cmdData: command))
        #expect(result.value?.first?.count == 512, "the first chunk is echoed: at most 512 bytes (\(String(describing: result.error)))")
        let written = stack.fixture.simulator.peripheral(Logger.address)?.value(of: Logger.write)
        #expect(written?.count == command.count - 512, "the rest came as one more chunk")
    }
}

/// An iOS-style app on its own queue: scans, connects, discovers, and records what happened.
final class QueuedApp: CentralManagerDelegate, PeripheralDelegate, @unchecked Sendable {
    let events: EventRecorder<String>
    private let lock = NSLock()
    private var found: Peripheral?
    weak var central: CentralManager?

    init(events: EventRecorder<String>) { self.events = events }

    var peripheral: Peripheral? {
        lock.lock()
        defer { lock.unlock() }
        return found
    }

    func centralManagerDidUpdateState(_ central: CentralManager) {
        if central.state == .poweredOn { central.scanForPeripherals(withServices: nil) }
    }

    func centralManager(_ central: CentralManager, didDiscover peripheral: Peripheral, advertisementData: AdvertisementData, rssi RSSI: Int) {
        guard peripheral.address == Logger.address else { return }
        lock.lock()
        let first = found == nil
        if first { found = peripheral }
        lock.unlock()
        guard first else { return }
        central.stopScan()
        peripheral.delegate = self
        central.connect(peripheral)
    }

    func centralManager(_ central: CentralManager, didConnect peripheral: Peripheral) {
        peripheral.discoverServices(nil)
    }

    func peripheral(_ peripheral: Peripheral, didDiscoverServices error: Error?) {
        guard let service = peripheral.services?.first(where: { $0.uuid == BluetoothUUID(string: Logger.service) }) else {
            return events.appendFromAnyThread("no service: \(String(describing: error))")
        }
        peripheral.discoverCharacteristics(nil, for: service)
    }

    func peripheral(_ peripheral: Peripheral, didDiscoverCharacteristicsFor service: Service, error: Error?) {
        events.appendFromAnyThread("characteristics")
    }
}
