import BleCore
import BleDSL
import Foundation

/// The DSL command engine against the peer: single-packet, multi-packet and streaming commands
/// and a task queue, with BleManager connecting by address.
enum EngineScenarios {
    static let all: [IntegrationScenario] = [commands]

    struct EchoCommand: PeripheralOperationCommand {
        let cmdData: Data
        func filterData(_ data: Data) -> Data? { data.first == 0x81 ? data : nil }
        func checkResponse(_ dataGroup: [Data], data: Data) -> CheckResponseResult { .success(data: [data]) }
        var timeOutInterval: TimeInterval { 20 }
    }

    struct BurstCommand: PeripheralOperationCommand {
        let count: UInt8
        var cmdData: Data { Data([PeerProtocol.Opcode.burst.rawValue, count]) }
        func filterData(_ data: Data) -> Data? { data.first == 0x82 ? data : nil }
        func checkResponse(_ dataGroup: [Data], data: Data) -> CheckResponseResult {
            let packets = dataGroup + [data]
            return packets.count >= Int(count) ? .success(data: packets) : .goon(data: packets)
        }
        var timeOutInterval: TimeInterval { 20 }
    }

    struct StreamCommand: PeripheralOperationCommand {
        let cmdData = Data([PeerProtocol.Opcode.startStream.rawValue])
        func filterData(_ data: Data) -> Data? { data.first == 0x83 ? data : nil }
        func checkResponse(_ dataGroup: [Data], data: Data) -> CheckResponseResult { .longConnection(data: [data]) }
    }

    struct StopStreamCommand: PeripheralOperationCommand {
        let cmdData = Data([PeerProtocol.Opcode.stopStream.rawValue])
        func filterData(_ data: Data) -> Data? { data.first == 0x84 ? data : nil }
        func checkResponse(_ dataGroup: [Data], data: Data) -> CheckResponseResult { .success(data: [data]) }
        var timeOutInterval: TimeInterval { 20 }
    }

    static let commands = IntegrationScenario(
        "dsl.commands", "BleManager connects by identifier; the engine runs a single-packet, a multi-packet and a streaming command, then a task queue."
    ) { context in
        _ = try await context.peer()
        // BlueZ learns the device from a scan (restarted as btvirt needs); BleManager then
        // connects by identifier without scanning.
        let scout = try await context.central()
        let found = try await context.discoverPeer(scout)
        let address = found.address
        let identifier = found.identifier.uuidString

        let manager = BleManager(centralOptions: CentralManagerOptions(
            bus: context.backend.bleBus, adapter: context.backend.centralAdapter, operationTimeout: .seconds(20), connectTimeout: .seconds(30)))
        context.adopt(manager.centralManager.centralManager)
        let device = PeripheralDevice()
        let pair = PeripheralDevice.Characteristic(writeUUID: PeerProtocol.command, readUUID: PeerProtocol.response,
                                                   serviceUUID: PeerProtocol.service)
        let engine = PeripheralDevice.DeviceCharacteristicValue()
        let adapter = CharacteristicAdapter(characteristic: pair, characteristicValue: engine)
        device.executable(commandItems: [.discoverServices([PeerProtocol.service]), .discoverCharacteristics([pair]),
                                         .characteristicValues([engine])])
        let connected = CallbackBridge<Result<Peripheral, BleManagerError>>()
        let disconnected = CallbackBridge<String>()
        manager.execute(commandItems: [.connect(.uuid(identifier)), .handle(device), .connectTimeout(30), .scanTimeout(30)]) { result in
            switch result {
            case .success(.connected(let peripheral)): connected.resume(.success(peripheral))
            case .success(.disconnected(_, let error)): disconnected.resume(error.map { "error \($0)" } ?? "ok")
            case .failure(let error): connected.resume(.failure(error))
            }
        }
        let peripheral = try await connected.value(within: .seconds(60), "BleManager connect").get()
        context.step("BleManager connected \(peripheral.address == address ? "to the scanned address" : peripheral.address)")
        let ready = CallbackBridge<Int>()
        adapter.readyForCommand { engine in ready.resume(engine.peripheral?.maximumWriteValueLength(for: .withoutResponse) ?? 0) }
        context.step("engine ready, chunk length \(try await ready.value(within: context.eventDeadline, "engine ready"))")

        let single = CallbackBridge<Result<Data, Error>>()
        engine.executable(option: EchoCommand(cmdData: Data([0x01, 0x48, 0x69])), singleCompletion: { single.resume($0) })
        let answer = try await single.value(within: context.eventDeadline, "single-packet command").get()
        context.step("single-packet command → \(ProbeEvent.hex(answer))")
        try context.expect(answer == Data([0x81, 0x48, 0x69]), "wrong echo \(ProbeEvent.hex(answer))")

        let multi = CallbackBridge<Result<[Data], Error>>()
        engine.executable(option: BurstCommand(count: 6), completion: { multi.resume($0) })
        let packets = try await multi.value(within: context.eventDeadline, "multi-packet command").get()
        context.step("multi-packet command → \(packets.count) packets")
        try context.expect(packets == (0..<6).map { PeerProtocol.burstPacket(UInt8($0), of: 6) }, "burst packets out of order or wrong")

        let streamed = StreamCounter()
        let enough = CallbackBridge<Void>()
        let token = engine.executable(option: StreamCommand(), completion: { result in
            guard case .success(let data) = result else { return }
            streamed.packets += data
            if streamed.packets.count == 4 { enough.resume(()) }
        })
        try await enough.value(within: context.eventDeadline, "4 stream packets")
        token.cancel()
        let sequence = streamed.packets.prefix(4).map { $0.count == 2 ? Int($0[$0.startIndex + 1]) : -1 }
        context.step("stream: 4 packets in sequence \(sequence == [0, 1, 2, 3]), cancelled")
        try context.expect(sequence == [0, 1, 2, 3], "stream packets \(sequence)")

        let stopped = CallbackBridge<Result<Data, Error>>()
        engine.executable(option: StopStreamCommand(), singleCompletion: { stopped.resume($0) })
        context.step("stop stream → \(ProbeEvent.hex(try await stopped.value(within: context.eventDeadline, "stop stream").get()))")

        let queue = BlueToothTaskQueue(engine: engine)
        let parsed = CallbackBridge<[String]>()
        var outputs: [String] = []
        for index in 0..<3 {
            let task = BlueToothTaskModel<String>(command: EchoCommand(cmdData: Data([0x01, UInt8(index)])),
                                                  parse: .value2({ data in "task \(index) → \(ProbeEvent.hex(data))" }))
            queue.add(task) { result in
                outputs.append((try? result.get()).map { "\($0)" } ?? "task \(index) failed: \(result)")
                if outputs.count == 3 { parsed.resume(outputs) }
            }
        }
        let results = try await parsed.value(within: context.eventDeadline, "three queued tasks")
        context.step("task queue \(results)")
        try context.expect(results.count == 3 && results.allSatisfy { !$0.contains("failed") }, "task queue: \(results)")
        manager.execute(commandItems: [.cancelConnect(peripheral)])
        context.step("BleManager cancelConnect: disconnected \(try await disconnected.value(within: context.eventDeadline, "disconnect"))")
    }

    /// Collects stream packets across callbacks.
    final class StreamCounter {
        var packets: [Data] = []
    }
}
