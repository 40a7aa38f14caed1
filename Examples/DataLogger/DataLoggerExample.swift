// A complete BleKit program in FXBlueTooth's style: Swift 5 language mode, no concurrency
// annotations, callbacks — what an iOS app using FXBlueTooth looks like after changing its
// imports. It talks to a "data logger": write 02… to echo, 01 for a 64-byte answer in four
// notifications, ff to make it drop the link.
import BleDSL
import Foundation

/// Prints each step of the walk-through.
public protocol TranscriptPrinter: AnyObject {
    func line(_ text: String)
}

/// The logger's echo: the answer is the first packet that starts with the opcode.
struct EchoCommand: PeripheralOperationCommand {
    let cmdData: Data
    func filterData(_ data: Data) -> Data? { data.first == cmdData.first ? data : nil }
    func checkResponse(_ dataGroup: [Data], data: Data) -> CheckResponseResult { .success(data: [data]) }
    var timeOutInterval: TimeInterval { 5 }
}

/// The logger's dump: 64 bytes over several notifications.
struct DumpCommand: PeripheralOperationCommand {
    let cmdData = Data([0x01])
    func checkResponse(_ dataGroup: [Data], data: Data) -> CheckResponseResult {
        let buffer = dataGroup + [data]
        return buffer.reduce(0) { $0 + $1.count } >= 64 ? .success(data: buffer) : .goon(data: buffer)
    }
    var timeOutInterval: TimeInterval { 5 }
}

/// The same dump read as a stream: every packet is delivered as it comes.
struct StreamCommand: PeripheralOperationCommand {
    let cmdData = Data([0x01])
    func checkResponse(_ dataGroup: [Data], data: Data) -> CheckResponseResult { .longConnection(data: [data]) }
}

/// Drops the link on purpose.
struct DropLinkCommand: PeripheralOperationCommand {
    let cmdData = Data([0xFF])
    func checkResponse(_ dataGroup: [Data], data: Data) -> CheckResponseResult { .success(data: [data]) }
    var timeOutInterval: TimeInterval { 3 }
}

/// FXBlueTooth's "BlueToothManager" pattern: one object owning the manager, the device, the
/// characteristic pair, the engine and the adapter.
public final class DataLoggerManager: PeripheralDidDisConnect, PeripheralFilter, DiscoverPeripheral {
    public static let service = CBUUID(string: "6e400001-b5a3-f393-e0a9-e50e24dcca9e")
    public static let write = CBUUID(string: "6e400002-b5a3-f393-e0a9-e50e24dcca9e")
    public static let notify = CBUUID(string: "6e400003-b5a3-f393-e0a9-e50e24dcca9e")

    let manager: BleManager
    let device = PeripheralDevice()
    let characteristic = PeripheralDevice.Characteristic(writeUUID: DataLoggerManager.write, readUUID: DataLoggerManager.notify)
    let value = PeripheralDevice.DeviceCharacteristicValue()
    let adapter: CharacteristicAdapter
    let printer: TranscriptPrinter
    var seen = Set<UUID>()

    public init(options: CentralManagerOptions, printer: TranscriptPrinter) {
        manager = BleManager(centralOptions: options)
        adapter = CharacteristicAdapter(characteristic: characteristic, characteristicValue: value)
        self.printer = printer
        device.executable(commandItems: [.discoverServices([DataLoggerManager.service]),
                                         .discoverCharacteristics([characteristic]),
                                         .characteristicValues([value])])
    }

    // PeripheralFilter: only data loggers.
    public func filter(peripheralInfo: PeripheralInfo) -> PeripheralInfo? {
        (peripheralInfo.advertisement.localName ?? "").hasPrefix("DataLogger") ? peripheralInfo : nil
    }

    // DiscoverPeripheral
    public func discover(peripheralGroup: [PeripheralInfo]) {
        for info in peripheralGroup where !seen.contains(info.peripheral.identifier) {
            seen.insert(info.peripheral.identifier)
            printer.line("found \(info.advertisement.localName ?? "?") \(info.peripheral.address) RSSI \(info.rssi?.intValue ?? 0) dBm, identifier \(info.peripheral.identifier)")
        }
    }

    // PeripheralDidDisConnect
    public func centralManager(_ central: CentralManager, didDisconnectPeripheral peripheral: Peripheral, error: Error?) {
        printer.line("link lost: \(peripheral.address)\(error.map { " (\($0))" } ?? "")")
    }

    /// Step 1: scan with the filter until a logger shows up; returns its identifier.
    func scan(completion: @escaping (String?) -> Void) {
        var done = false
        manager.execute(commandItems: [.scanServices([]), .filter(self), .discover(self),
                                       .connect(.predicate { _ in true }), .connectTimeout(10), .scanTimeout(10)]) { [weak self] result in
            guard let self = self, !done else { return }
            done = true
            switch result {
            case .success(.connected(let peripheral)):
                // This first connection only learned the identifier: disconnect, then connect by it.
                self.manager.execute(commandItems: [.cancelConnect(peripheral)]) { _ in completion(peripheral.identifier.uuidString) }
            case .success(.disconnected):
                completion(nil)
            case .failure(let error):
                self.printer.line("scan failed: \(error)")
                completion(nil)
            }
        }
    }

    /// Step 2: connect by identifier, with a reconnect policy; `onEvent` hears every event.
    func connect(identifier: String, onEvent: @escaping (BleManager.Event) -> Void) {
        manager.execute(commandItems: [.connect(.uuid(identifier)), .handle(device), .didDisConnect(self),
                                       .connectTimeout(10), .scanTimeout(10),
                                       .reconnect(.exponentialBackoff(initialDelay: 0.2, maximumAttempts: 5))]) { result in
            switch result {
            case .success(let event): onEvent(event)
            case .failure(let error): self.printer.line("connect failed: \(error)")
            }
        }
    }
}

/// Runs the whole walk-through; blocks the calling thread (not BleKit's loop) until done.
public enum DataLoggerWalkthrough {
    public static func run(options: CentralManagerOptions, printer: TranscriptPrinter) -> Bool {
        let logger = DataLoggerManager(options: options, printer: printer)
        let step = DispatchSemaphore(value: 0)
        func wait(_ seconds: Double = 15) -> Bool { step.wait(timeout: .now() + seconds) == .success }

        printer.line("scanning for data loggers (filter: name starts with DataLogger)")
        var identifier: String?
        logger.scan { identifier = $0; step.signal() }
        guard wait(), let target = identifier else { printer.line("no data logger found"); return false }

        printer.line("connecting by identifier \(target)")
        var connections = 0
        let reconnected = DispatchSemaphore(value: 0)
        logger.connect(identifier: target) { event in
            switch event {
            case .connected(let peripheral):
                connections += 1
                printer.line(connections == 1 ? "connected to \(peripheral.address)" : "reconnected to \(peripheral.address) automatically")
                if connections == 1 { step.signal() } else { reconnected.signal() }
            case .disconnected:
                break
            }
        }
        guard wait() else { return false }

        logger.adapter.readyForCommand { engine in
            printer.line("services discovered; write and notify characteristics ready (MTU allows \(engine.peripheral?.maximumWriteValueLength(for: .withoutResponse) ?? 0)-byte writes)")
            step.signal()
        }
        guard wait() else { return false }

        logger.value.executable(option: EchoCommand(cmdData: Data([0x02, 0x48, 0x69])), singleCompletion: { result in
            switch result {
            case .success(let data): printer.line("single-packet command 02 48 69 → \(data.map { String(format: "%02x", $0) }.joined(separator: " "))")
            case .failure(let error): printer.line("single-packet command failed: \(error)")
            }
            step.signal()
        })
        guard wait() else { return false }

        logger.value.executable(option: DumpCommand(), completion: { result in
            switch result {
            case .success(let packets): printer.line("multi-packet command 01 → \(packets.count) packets, \(packets.reduce(0) { $0 + $1.count }) bytes")
            case .failure(let error): printer.line("multi-packet command failed: \(error)")
            }
            step.signal()
        })
        guard wait() else { return false }

        var streamed = 0
        var token: CommandToken?
        token = logger.value.executable(option: StreamCommand(), completion: { result in
            guard case .success(let packets) = result else { return }
            streamed += 1
            printer.line("stream packet \(streamed): \(packets[0].count) bytes")
            if streamed == 4 {
                token?.cancel()
                step.signal()
            }
        })
        guard wait() else { return false }
        printer.line("stream cancelled after 4 packets")

        let queue = BlueToothTaskQueue(engine: logger.value)
        let task = BlueToothTaskModel<String>(command: EchoCommand(cmdData: Data([0x02, 0x54])),
                                              parse: .value2({ data in "task parsed \(data.count) bytes" }),
                                              plugins: [{ text in printer.line("task plugin: \(text)") }])
        queue.add(task, retries: 1) { _ in step.signal() }
        guard wait() else { return false }

        printer.line("asking the logger to drop the link")
        logger.value.executable(option: DropLinkCommand(), completion: { result in
            if case .failure(let error) = result { printer.line("command ended: \(error)") }
        })
        guard reconnected.wait(timeout: .now() + 20) == .success else { printer.line("no reconnect"); return false }
        logger.adapter.readyForCommand { _ in step.signal() }
        guard wait() else { return false }
        logger.value.executable(option: EchoCommand(cmdData: Data([0x02, 0x4f, 0x4b])), singleCompletion: { result in
            if case .success(let data) = result {
                printer.line("after reconnect, command 02 4f 4b → \(data.map { String(format: "%02x", $0) }.joined(separator: " "))")
            }
            step.signal()
        })
        guard wait() else { return false }
        logger.manager.cancelAll()
        printer.line("done")
        return true
    }
}
