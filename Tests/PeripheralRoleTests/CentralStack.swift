import BleCore
import BleDSL
import BleDBus
import BleTestSupport
import Foundation
import Testing

/// A central written with the DSL (BleManager, PeripheralDevice, DeviceCharacteristicValue) on
/// its own bus connection: the other side of a `PeripheralHarness`.
@BleLoop
final class CentralStack {
    let manager: BleManager
    let device = PeripheralDevice()
    let characteristic: PeripheralDevice.Characteristic
    let engine = PeripheralDevice.DeviceCharacteristicValue()
    let adapter: CharacteristicAdapter
    let events = EventRecorder<String>()

    let service: BluetoothUUID

    init(busAddress: String, adapter adapterName: String? = nil, service: BluetoothUUID = Chat.service,
         write: BluetoothUUID = Chat.receive, read: BluetoothUUID = Chat.send) {
        self.service = service
        manager = BleManager(centralOptions: CentralManagerOptions(bus: .address(busAddress), adapter: adapterName,
                                                                   operationTimeout: .seconds(5), connectTimeout: .seconds(5)))
        characteristic = PeripheralDevice.Characteristic(writeUUID: write, readUUID: read)
        adapter = CharacteristicAdapter(characteristic: characteristic, characteristicValue: engine)
        device.executable(commandItems: [.discoverServices([service]), .discoverCharacteristics([characteristic]),
                                         .characteristicValues([engine])])
    }

    /// Scans for the chat service by name, connects, and waits until the engine is subscribed.
    func connect(name: String = "chat-periph") async throws {
        let events = self.events
        manager.execute(commandItems: [.scanServices([service]), .connect(.predicate { $0.advertisement.localName == name }),
                                       .handle(device), .scanTimeout(TestTime.scaled(10))]) { result in
            switch result {
            case .success(.connected): events.appendFromAnyThread("connected")
            case .success(.disconnected): events.appendFromAnyThread("disconnected")
            case .failure(let error): events.appendFromAnyThread("failure: \(error)")
            }
        }
        try await events.wait("connected", timeout: .seconds(15)) { $0.contains("connected") || $0.contains { $0.hasPrefix("failure") } }
        #expect(events.events.contains("connected"), "\(events.events)")
        let ready = EventRecorder<Bool>()
        adapter.readyForCommand { _ in ready.appendFromAnyThread(true) }
        try await ready.wait(count: 1, timeout: .seconds(10))
    }

    /// Runs a command and waits for its result.
    func run(_ command: PeripheralOperationCommand) async throws -> Result<[Data], Error> {
        let results = EventRecorder<Result<[Data], Error>>()
        engine.executable(option: command, completion: { results.appendFromAnyThread($0) })
        try await results.wait(count: 1, timeout: .seconds(15))
        return results.events[0]
    }

    var centralManager: BleCore.CentralManager { manager.centralManager.centralManager }

    func tearDown() {
        manager.cancelAll()
        centralManager.close()
    }
}

/// Collects `packets` packets (the multi-packet response of a command).
struct CollectCommand: PeripheralOperationCommand {
    var cmdData: Data
    var packets: Int
    var timeOutInterval: TimeInterval = 10
    func checkResponse(_ dataGroup: [Data], data: Data) -> CheckResponseResult {
        let buffer = dataGroup + [data]
        return buffer.count >= packets ? .success(data: buffer) : .goon(data: buffer)
    }
}
