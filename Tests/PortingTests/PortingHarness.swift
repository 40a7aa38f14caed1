import BleDBus
import BleDSL
import BleSim
import BleTestSupport
import Foundation
import Testing

/// The FFE0 device of FXBlueTooth's README: FFE1 takes commands, FFE2 answers; AA → one
/// packet, BB → three, CC → a stream; FFE3 is readable ("LED state") with a user description.
enum Device {
    static let address = "C0:FF:EE:00:11:E0"
    static let service = "0000ffe0-0000-1000-8000-00805f9b34fb"
    static let write = "0000ffe1-0000-1000-8000-00805f9b34fb"
    static let notify = "0000ffe2-0000-1000-8000-00805f9b34fb"
    static let led = "0000ffe3-0000-1000-8000-00805f9b34fb"

    static func spec(name: String = "MyDevice-01") -> PeripheralSpec {
        PeripheralSpec(address: address, name: name, rssi: -42, serviceUUIDs: [service], mtu: 185, services: [
            ServiceSpec(uuid: service, characteristics: [
                CharacteristicSpec(uuid: write, flags: ["write", "write-without-response"]),
                CharacteristicSpec(uuid: notify, flags: ["notify"]),
                CharacteristicSpec(uuid: led, flags: ["read"], value: Data([0x01]),
                                   descriptors: [DescriptorSpec(uuid: "2901", flags: ["read"], value: Data("LED".utf8))]),
            ]),
        ], rules: [
            BehaviourRule(.write(characteristic: write, prefix: Data([0xAA])), [.notify(characteristic: notify, value: Data([0xAA, 0x01]), packets: nil)]),
            BehaviourRule(.write(characteristic: write, prefix: Data([0xBB])), [
                .notify(characteristic: notify, value: Data([0xBB, 0x01]), packets: nil),
                .notify(characteristic: notify, value: Data([0xBB, 0x02]), packets: nil),
                .notify(characteristic: notify, value: Data([0xBB, 0x03]), packets: nil),
            ]),
            BehaviourRule(.write(characteristic: write, prefix: Data([0xCC])), [.notify(characteristic: notify, value: Data([0xCC, 0x01]), packets: nil)]),
            BehaviourRule(.periodic(milliseconds: 100), [.notify(characteristic: notify, value: Data([0xCC, 0x02]), packets: nil)]),
        ])
    }
}

/// A command of the README's protocol: claims the packets that start with its opcode.
struct OpcodeCommand: PeripheralOperationCommand {
    var opcode: UInt8
    var packets = 1
    var stream = false
    var cmdData: Data { Data([opcode, 0x00]) }
    var timeOutInterval: TimeInterval { 5 }
    func filterData(_ data: Data) -> Data? { data.first == opcode ? data : nil }
    func checkResponse(_ dataGroup: [Data], data: Data) -> CheckResponseResult {
        if stream { return .longConnection(data: [data]) }
        let buffer = dataGroup + [data]
        return buffer.count >= packets ? .success(data: buffer) : .goon(data: buffer)
    }
}

/// A connected FXBlueTooth-shaped stack (manager, device, characteristic pair, engine, adapter).
@BleLoop
final class Stack {
    let fixture: SimulatorFixture
    let manager: BleManager
    let device = PeripheralDevice()
    let characteristic: PeripheralDevice.Characteristic
    let engine = PeripheralDevice.DeviceCharacteristicValue()
    let adapter: CharacteristicAdapter
    let events = EventRecorder<String>()

    init(fixture: SimulatorFixture, service: String = Device.service, write: String = Device.write, read: String = Device.notify,
         options: (inout CentralManagerOptions) -> Void = { _ in }) {
        self.fixture = fixture
        var central = CentralManagerOptions(bus: .address(fixture.bus.address), operationTimeout: .seconds(5), connectTimeout: .seconds(5))
        options(&central)
        manager = BleManager(centralOptions: central)
        characteristic = PeripheralDevice.Characteristic(writeUUID: BluetoothUUID(string: write), readUUID: BluetoothUUID(string: read))
        adapter = CharacteristicAdapter(characteristic: characteristic, characteristicValue: engine)
        device.executable(commandItems: [.discoverServices([BluetoothUUID(string: service)]),
                                         .discoverCharacteristics([characteristic]), .characteristicValues([engine])])
    }

    static func start(_ peripherals: [PeripheralSpec] = [Device.spec()], configuration: Simulator.Configuration = .init(),
                      service: String = Device.service, write: String = Device.write, read: String = Device.notify) async throws -> Stack {
        let fixture = try await SimulatorFixture.start(peripherals: peripherals, configuration: configuration)
        return Stack(fixture: fixture, service: service, write: write, read: read)
    }

    /// Runs `execute` with the handler recording its events as text.
    func execute(_ items: [BleManagerCommandItem], into recorder: EventRecorder<String>? = nil) {
        let events = recorder ?? self.events
        manager.execute(commandItems: items) { result in
            switch result {
            case .success(.connected): events.appendFromAnyThread("connected")
            case .success(.disconnected): events.appendFromAnyThread("disconnected")
            case .failure(let error): events.appendFromAnyThread("failure: \(error)")
            }
        }
    }

    /// Connects by address and waits for the engine to be ready.
    func connect() async throws {
        execute([.connect(.uuid(Device.address)), .handle(device), .scanTimeout(TestTime.scaled(5))])
        try await events.wait("connected") { $0.contains("connected") }
        let ready = EventRecorder<Bool>()
        adapter.readyForCommand { _ in ready.appendFromAnyThread(true) }
        try await ready.wait(count: 1)
    }

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
