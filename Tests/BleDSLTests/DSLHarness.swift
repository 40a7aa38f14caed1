import BleDBus
import BleDSL
import BleSim
import BleTestSupport
import Foundation
import Testing

/// UUIDs of the data-logger peripheral the DSL tests talk to.
enum Logger {
    static let address = "C0:FF:EE:00:00:03"
    static let service = "6e400001-b5a3-f393-e0a9-e50e24dcca9e"
    static let write = "6e400002-b5a3-f393-e0a9-e50e24dcca9e"
    static let notify = "6e400003-b5a3-f393-e0a9-e50e24dcca9e"
    static let other = "6e400004-b5a3-f393-e0a9-e50e24dcca9e"
    static let response = Data((0..<64).map { UInt8($0) })

    /// 01 → 64 bytes in 4 notifications; 02 → echo; 03 → silence; 05 → a packet on another
    /// characteristic, then the echo; ff → disconnect.
    static func spec(address: String = Logger.address, name: String = "DataLogger", mtu: UInt16 = 185) -> PeripheralSpec {
        PeripheralSpec(address: address, name: name, rssi: -50, mtu: mtu, services: [
            ServiceSpec(uuid: service, characteristics: [
                CharacteristicSpec(uuid: write, flags: ["write", "write-without-response"]),
                CharacteristicSpec(uuid: notify, flags: ["notify"]),
                CharacteristicSpec(uuid: other, flags: ["notify"]),
            ]),
        ], rules: [
            BehaviourRule(.write(characteristic: write, prefix: Data([0x01])), [.notify(characteristic: notify, value: response, packets: 4)]),
            BehaviourRule(.write(characteristic: write, prefix: Data([0x02])), [.echo(characteristic: notify)]),
            BehaviourRule(.write(characteristic: write, prefix: Data([0x05])), [
                .notify(characteristic: other, value: Data([0xEE]), packets: nil), .echo(characteristic: notify),
            ]),
            BehaviourRule(.write(characteristic: write, prefix: Data([0xFF])), [.disconnect]),
        ])
    }
}

/// Answers with the first packet; like a real protocol, it only claims packets that start with
/// its own opcode (the first byte it sends).
struct EchoCommand: PeripheralOperationCommand {
    var cmdData: Data
    var timeOutInterval: TimeInterval = 5
    func filterData(_ data: Data) -> Data? {
        guard let opcode = cmdData.first, opcode == 0x02 || opcode == 0x05 else { return data }
        return data.first == opcode ? data : nil
    }
    func checkResponse(_ dataGroup: [Data], data: Data) -> CheckResponseResult { .success(data: dataGroup + [data]) }
}

/// Collects `packets` packets.
struct CollectCommand: PeripheralOperationCommand {
    var cmdData: Data
    var packets: Int
    var timeOutInterval: TimeInterval = 5
    func checkResponse(_ dataGroup: [Data], data: Data) -> CheckResponseResult {
        let buffer = dataGroup + [data]
        return buffer.count >= packets ? .success(data: buffer) : .goon(data: buffer)
    }
}

/// A connected DSL stack against BleSim: manager, device, engine, adapter.
@BleLoop
final class DSLStack {
    let fixture: SimulatorFixture
    let manager: BleManager
    let device = PeripheralDevice()
    let characteristic: PeripheralDevice.Characteristic
    let engine = PeripheralDevice.DeviceCharacteristicValue()
    let adapter: CharacteristicAdapter
    let events = EventRecorder<String>()

    init(fixture: SimulatorFixture, readUUID: String = Logger.notify) {
        self.fixture = fixture
        manager = BleManager(centralOptions: CentralManagerOptions(bus: .address(fixture.bus.address), operationTimeout: .seconds(5),
                                                                   connectTimeout: .seconds(5)))
        characteristic = PeripheralDevice.Characteristic(writeUUID: BluetoothUUID(string: Logger.write),
                                                        readUUID: BluetoothUUID(string: readUUID))
        adapter = CharacteristicAdapter(characteristic: characteristic, characteristicValue: engine)
        device.executable(commandItems: [.discoverServices([BluetoothUUID(string: Logger.service)]),
                                         .discoverCharacteristics([characteristic]), .characteristicValues([engine])])
    }

    static func start(peripherals: [PeripheralSpec] = [Logger.spec()], readUUID: String = Logger.notify) async throws -> DSLStack {
        let fixture = try await SimulatorFixture.start(peripherals: peripherals)
        return DSLStack(fixture: fixture, readUUID: readUUID)
    }

    /// Connects to the logger and waits until the engine is ready.
    func connect(address: String = Logger.address, extra: [BleManagerCommandItem] = []) async throws {
        let events = self.events
        manager.execute(commandItems: [.connect(.uuid(address.lowercased())), .handle(device), .scanTimeout(TestTime.scaled(5))] + extra) { result in
            switch result {
            case .success(.connected): events.appendFromAnyThread("connected")
            case .success(.disconnected): events.appendFromAnyThread("disconnected")
            case .failure(let error): events.appendFromAnyThread("failure: \(error)")
            }
        }
        try await events.wait("connected") { $0.contains("connected") }
        let ready = EventRecorder<Bool>()
        adapter.readyForCommand { _ in ready.appendFromAnyThread(true) }
        try await ready.wait(count: 1)
    }

    /// Runs a command and waits for its result.
    func run(_ command: PeripheralOperationCommand) async throws -> Result<[Data], Error> {
        let results = EventRecorder<Result<[Data], Error>>()
        engine.executable(option: command, completion: { results.appendFromAnyThread($0) })
        try await results.wait(count: 1)
        return results.events[0]
    }

    func tearDown() {
        manager.cancelAll()
        manager.centralManager.centralManager.close()
        fixture.tearDown()
    }
}

extension Result {
    var value: Success? { try? get() }
    var error: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
