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
    private let stateLock = NSLock()
    private var over = false

    /// The walk-through has ended: its own teardown's disconnect is not a link loss to report
    /// (it would print after the verdict).
    func end() {
        stateLock.lock()
        over = true
        stateLock.unlock()
    }

    private var isOver: Bool {
        stateLock.lock()
        defer { stateLock.unlock() }
        return over
    }

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
        guard !isOver else { return }
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
    /// Runs every step, prints each as it goes and a summary at the end, and returns the
    /// verdicts. A step another depends on (scan, connect, services, the reconnect) ends the
    /// walk-through when it fails; the commands are independent, so one failing does not stop
    /// the next. Every step waits with a deadline of its own.
    public static func run(options: CentralManagerOptions, printer: TranscriptPrinter) -> WalkthroughReport {
        let logger = DataLoggerManager(options: options, printer: printer)
        var report = WalkthroughReport()
        walk(logger, printer: printer, report: &report)
        logger.end()
        logger.manager.cancelAll()
        for line in report.summary { printer.line(line) }
        return report
    }

    /// Runs `body`, which calls its argument once with the step's outcome, and waits for it;
    /// the first outcome counts, later ones (a completion after a timeout) are ignored.
    static func perform(within seconds: Double, _ body: (@escaping (Bool, String) -> Void) -> Void) -> (passed: Bool, detail: String) {
        let done = DispatchSemaphore(value: 0)
        let lock = NSLock()
        var outcome: (Bool, String)?
        body { passed, detail in
            lock.lock()
            if outcome == nil { outcome = (passed, detail) }
            lock.unlock()
            done.signal()
        }
        guard done.wait(timeout: .now() + seconds) == .success else { return (false, "no answer within \(Int(seconds)) s") }
        lock.lock()
        defer { lock.unlock() }
        return outcome ?? (false, "no answer")
    }

    static func hex(_ data: Data) -> String { data.map { String(format: "%02x", $0) }.joined(separator: " ") }

    /// Records `outcome` for `step` and says whether it passed.
    @discardableResult
    static func record(_ step: WalkthroughStep, _ outcome: (passed: Bool, detail: String), in report: inout WalkthroughReport) -> Bool {
        report.record(step, passed: outcome.passed, outcome.detail)
        return outcome.passed
    }

    /// An echo command and its verdict: the answer must be the command itself.
    static func echo(_ logger: DataLoggerManager, _ command: Data, printer: TranscriptPrinter, label: String) -> (passed: Bool, detail: String) {
        perform(within: 15) { finish in
            logger.value.executable(option: EchoCommand(cmdData: command), singleCompletion: { result in
                switch result {
                case .success(let data):
                    printer.line("\(label) \(hex(command)) → \(hex(data))")
                    finish(data == command, data == command ? "answered \(hex(data))" : "answered \(hex(data)), expected \(hex(command))")
                case .failure(let error):
                    printer.line("\(label) \(hex(command)) failed: \(error)")
                    finish(false, "\(error)")
                }
            })
        }
    }

    /// The steps; false once one failed that the rest depend on.
    @discardableResult
    static func walk(_ logger: DataLoggerManager, printer: TranscriptPrinter, report: inout WalkthroughReport) -> Bool {
        printer.line("scanning for data loggers (filter: name starts with DataLogger)")
        var identifier: String?
        let scanned = perform(within: 15) { finish in
            logger.scan { found in
                identifier = found
                finish(found != nil, found.map { "found identifier \($0)" } ?? "no data logger found")
            }
        }
        guard record(.scan, scanned, in: &report), let target = identifier else {
            printer.line("no data logger found")
            return false
        }

        printer.line("connecting by identifier \(target)")
        var connections = 0
        let connected = DispatchSemaphore(value: 0)
        let reconnected = DispatchSemaphore(value: 0)
        logger.connect(identifier: target) { event in
            switch event {
            case .connected(let peripheral):
                connections += 1
                printer.line(connections == 1 ? "connected to \(peripheral.address)" : "reconnected to \(peripheral.address) automatically")
                if connections == 1 { connected.signal() } else { reconnected.signal() }
            case .disconnected:
                break
            }
        }
        let connectedInTime = connected.wait(timeout: .now() + 15) == .success
        guard record(.connect, (connectedInTime, connectedInTime ? "connected" : "no connection within 15 s"), in: &report) else { return false }

        let ready = perform(within: 15) { finish in
            logger.adapter.readyForCommand { engine in
                let length = engine.peripheral?.maximumWriteValueLength(for: .withoutResponse) ?? 0
                printer.line("services discovered; write and notify characteristics ready (MTU allows \(length)-byte writes)")
                finish(true, "MTU allows \(length)-byte writes")
            }
        }
        guard record(.servicesReady, ready, in: &report) else { return false }

        record(.singlePacket, echo(logger, Data([0x02, 0x48, 0x69]), printer: printer, label: "single-packet command"), in: &report)

        record(.multiPacket, perform(within: 15) { finish in
            logger.value.executable(option: DumpCommand(), completion: { result in
                switch result {
                case .success(let packets):
                    let bytes = packets.reduce(0) { $0 + $1.count }
                    printer.line("multi-packet command 01 → \(packets.count) packets, \(bytes) bytes")
                    finish(bytes >= 64, "\(packets.count) packets, \(bytes) bytes")
                case .failure(let error):
                    printer.line("multi-packet command failed: \(error)")
                    finish(false, "\(error)")
                }
            })
        }, in: &report)

        let streamedLock = NSLock()
        var streamed = 0
        var token: CommandToken?
        let stream = perform(within: 15) { finish in
            token = logger.value.executable(option: StreamCommand(), completion: { result in
                switch result {
                case .success(let packets):
                    streamedLock.lock()
                    streamed += 1
                    let count = streamed
                    streamedLock.unlock()
                    printer.line("stream packet \(count): \(packets.first?.count ?? 0) bytes")
                    if count == 4 { finish(true, "4 packets, then cancelled") }
                case .failure(let error):
                    finish(false, "\(error)")
                }
            })
        }
        token?.cancel()
        if stream.passed { printer.line("stream cancelled after 4 packets") }
        record(.stream, stream, in: &report)

        let queue = BlueToothTaskQueue(engine: logger.value)
        record(.taskQueue, perform(within: 15) { finish in
            let task = BlueToothTaskModel<String>(command: EchoCommand(cmdData: Data([0x02, 0x54])),
                                                  parse: .value2({ data in "task parsed \(data.count) bytes" }),
                                                  plugins: [{ text in printer.line("task plugin: \(text)") }])
            queue.add(task, retries: 1) { result in
                switch result {
                case .success(let value): finish(true, "\(value)")
                case .failure(let error):
                    printer.line("task failed: \(error)")
                    finish(false, "\(error)")
                }
            }
        }, in: &report)

        printer.line("asking the logger to drop the link")
        logger.value.executable(option: DropLinkCommand(), completion: { result in
            if case .failure(let error) = result { printer.line("command ended: \(error)") }
        })
        let back = reconnected.wait(timeout: .now() + 20) == .success
        if !back { printer.line("no reconnect") }
        guard record(.reconnect, (back, back ? "reconnected automatically" : "no reconnect within 20 s"), in: &report) else { return false }

        let readyAgain = perform(within: 15) { finish in
            logger.adapter.readyForCommand { _ in finish(true, "characteristics ready again") }
        }
        guard record(.servicesReadyAfterReconnect, readyAgain, in: &report) else { return false }

        return record(.commandAfterReconnect, echo(logger, Data([0x02, 0x4f, 0x4b]), printer: printer, label: "after reconnect, command"),
                      in: &report)
    }
}
