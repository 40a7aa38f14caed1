import BleAsync
@testable import BleCore
import BleDBus
import BleDSL
import BleSim
import BleTestSupport
import Foundation
import Testing

/// Each fault × each operation in flight (FaultMatrix.swift lists both and the endings the
/// documentation allows). For every cell: the operation ends once, within its deadline, with
/// an allowed ending; after the fault is undone the next operations work; and the counts of
/// pending operations, notify subscriptions, timers, sockets and calls return to zero, the
/// bus subscriptions and match rules to what they were before.
@Suite(.timeLimit(.minutes(TestTime.minutes(2))))
@BleLoop
struct FaultMatrixTests {
    // One cell at a time: 120 private buses and simulators at once starve the rest of the
    // suite on 2 cores (deadline-bound tests elsewhere then fail).
    @Test("fault × operation", .serialized, arguments: MatrixCell.selected)
    func cell(_ cell: MatrixCell) async throws {
        let outcome: Outcome
        if cell.operation == .dslCommand {
            outcome = try await DSLCell(cell).run()
        } else if cell.operation.isServed || (cell.fault == .peerExit && cell.operation != .pairing) {
            outcome = try await RoleCell(cell).run()
        } else {
            outcome = try await CoreCell(cell).run()
        }
        MatrixReport.shared.record(cell, outcome)
    }

    @Test func theMatrixIsComplete() {
        #expect(MatrixCell.all.count == MatrixFault.allCases.count * MatrixOperation.allCases.count)
        #expect(MatrixCell.all.count >= 208)
        // Every cell that does not run says why (RELIABILITY.md lists them).
        let skipped = MatrixCell.all.filter { $0.notApplicable != nil }
        #expect(MatrixCell.runnable.count + skipped.count == MatrixCell.all.count)
        for cell in skipped { print("matrix n/a | \(cell.fault) | \(cell.operation) | \(cell.notApplicable ?? "")") }
    }
}

/// Collects the cells' endings; printed as one table line per cell (RELIABILITY.md quotes it).
final class MatrixReport: Sendable {
    static let shared = MatrixReport()
    private let lines = Locked<[String]>([])
    func record(_ cell: MatrixCell, _ outcome: Outcome) {
        let line = "matrix | \(cell.fault) | \(cell.operation) | \(outcome)"
        lines.withLock { $0.append(line) }
        print(line)
    }
}

enum Matrix {
    static let notifyValues: [UInt8] = [1, 2, 3, 4]
    static let early = Data([0xAB])

    static func spec(for fault: MatrixFault) -> PeripheralSpec {
        var rules: [BehaviourRule] = []
        if fault == .notificationBeforeReply {
            // Notifies the moment the CCCD is written: before bluetoothd's reply reaches us.
            rules.append(BehaviourRule(.subscribe(characteristic: Sample.full("ff02")), [.notify(characteristic: Sample.full("ff02"), value: early, packets: nil)]))
        }
        var changed: [ServiceSpec]?
        if fault == .servicesChanged {
            changed = [ServiceSpec(uuid: "ff00", characteristics: [
                CharacteristicSpec(uuid: "ff01", flags: ["read", "write"], value: Data([0x11])),
                CharacteristicSpec(uuid: "ff02", flags: ["read", "notify"], value: Data([0x12])),
                CharacteristicSpec(uuid: "ff03", flags: ["write-without-response"]),
            ]), ServiceSpec(uuid: "ee00", characteristics: [CharacteristicSpec(uuid: "ee01", flags: ["read"], value: Data([0xEE]))])]
        }
        return Sample.spec(rules: rules, servicesAfterReconnect: changed)
    }

    static func configuration(_ fault: MatrixFault) -> Simulator.Configuration {
        var configuration = Simulator.Configuration(adapters: [Simulator.AdapterSpec(index: 0)])
        // Expiry needs BlueZ to forget the device soon after the link went.
        if fault == .deviceExpiry { configuration.temporaryTimeoutSeconds = 0.2 }
        return configuration
    }

    /// Values as the fault delivers them.
    static func expectedNotifications(_ fault: MatrixFault) -> [UInt8] {
        switch fault {
        case .notificationsDropped: return [1, 3]
        case .notificationsDuplicated: return [1, 1, 2, 2, 3, 3, 4, 4]
        case .notificationsReordered: return [2, 1, 4, 3]
        default: return notifyValues
        }
    }

    @BleLoop static func arm(_ fault: MatrixFault, on simulator: Simulator) {
        switch fault {
        case .notificationsDropped: simulator.faults.setNotificationFault(Sample.address, .dropEvery(2))
        case .notificationsDuplicated: simulator.faults.setNotificationFault(Sample.address, .duplicate)
        case .notificationsReordered: simulator.faults.setNotificationFault(Sample.address, .reorderPairs)
        case .accessDenied: simulator.faults.denyAccessToEveryone()
        default: break
        }
    }
}

/// One cell against BleCore.
@BleLoop
final class CoreCell {
    let cell: MatrixCell
    var bench: Bench!
    var peripheral: Peripheral?
    var target: Characteristic?
    var fault: MatrixFault { cell.fault }
    var operation: MatrixOperation { cell.operation }
    /// The async column's manager (its central is `bench.central`).
    var asyncManager: AsyncBleManager?
    /// How the async call or the pairing ended (they report through no delegate).
    let sideEndings = EventRecorder<Outcome>()
    /// The pairing column's agent, in a process of its own (a bus connection of its own).
    var agent: PairingAgent?
    let pairingAnswers = PairingHolder()

    init(_ cell: MatrixCell) { self.cell = cell }

    /// The async call's connect rows: the async `connect` is the call in flight.
    var asyncConnects: Bool { operation == .asyncCall && [.connectTransient, .connectPermanent].contains(fault) }
    var endsBySideChannel: Bool { operation == .asyncCall || operation == .pairing }

    static func options(_ options: inout CentralManagerOptions) {
        options.operationTimeout = .seconds(1)
        options.connectTimeout = .seconds(5)
        options.connectRetries = 2
        options.bluetoothdReturnTimeout = .seconds(60)
    }

    func run() async throws -> Outcome {
        if operation == .asyncCall {
            (bench, asyncManager) = try await Bench.startAsync([Matrix.spec(for: fault)], configuration: Matrix.configuration(fault),
                                                               configure: Self.options)
        } else {
            bench = try await Bench.start([Matrix.spec(for: fault)], configuration: Matrix.configuration(fault), configure: Self.options)
        }
        defer {
            agent?.stop()
            asyncManager?.close()
            bench.tearDown()
        }
        try await roundTrip()
        let baseline = bench.central.currentDiagnostics
        try await prepare()
        armBefore()
        let mark = bench.recorder.mark
        try await issueAndStrike()
        let outcome: Outcome
        if endsBySideChannel {
            try await sideEndings.wait("the end of \(operation)", timeout: .seconds(20)) { !$0.isEmpty }
            outcome = sideEndings.events[0]
            #expect(cell.allowed.contains(outcome), "\(cell) ended with \(outcome); allowed: \(cell.allowed)")
        } else {
            let ending = try await bench.recorder.wait(since: mark, timeout: .seconds(20), "the end of \(operation)", where: completes)
            outcome = Outcome(ending.error)
            #expect(cell.allowed.contains(outcome), "\(cell) ended with \(ending); allowed: \(cell.allowed)")
        }
        if operation == .notify, outcome == .success { try await checkNotifications() }
        if operation == .pairing { try await pairingQuestionsEnded() }
        // A second completion would have arrived by now: its cause was handled before the
        // reply of this round trip.
        try await roundTrip()
        let completions = endsBySideChannel ? sideEndings.events.count : bench.recorder.count(since: mark, where: completesOnce)
        #expect(completions <= 1, "\(cell): \(completions) completions")
        try await recover()
        let recovered = bench.recorder.mark
        try await laterOperationsWork()
        try await quiesce()
        #expect(bench.recorder.count(since: recovered) { if case .state(.unknown) = $0 { return true }; return false } == 0)
        let after = bench.central.currentDiagnostics
        #expect(after.pendingOperations == 0 && after.notifySubscriptions == 0 && after.timers == 0 && after.fileDescriptors == 0
                    && after.connection.pendingCalls == 0, "\(cell): left \(after)")
        #expect(after.connection.matchRules == baseline.connection.matchRules
                    && after.connection.signalSubscriptions == baseline.connection.signalSubscriptions,
                "\(cell): bus state \(after.connection), before \(baseline.connection)")
        if let asyncManager {
            let left = await asyncManager.pendingCallCount
            #expect(left == 0, "\(cell): \(left) async calls still registered")
        }
        if let connection = agent?.session.connection, connection.isOpen {
            #expect(connection.diagnostics.pendingCalls == 0, "\(cell): the agent left \(connection.diagnostics)")
        }
        return outcome
    }

    /// A call through the central's own connection to the simulator: every reply sent
    /// before it has been handled when it returns.
    func roundTrip() async throws {
        guard let connection = bench.central.dbusConnection, bench.simulator.isRunning else { return }
        _ = try await connection.call(destination: "org.bluez", path: "/", interface: "org.freedesktop.DBus.Peer", member: "Ping")
    }

    func prepare() async throws {
        if operation == .pairing { try await startAgent() }
        switch operation {
        case .scan: break
        case .connect: peripheral = try await bench.discover()
        case .asyncCall where asyncConnects: peripheral = try await bench.discover()
        case .discover:
            peripheral = try await bench.discover()
            try await bench.connect(peripheral!)
        default:
            peripheral = try await bench.connected()
            target = bench.characteristic(peripheral!, targetUUID)
        }
    }

    var targetUUID: BluetoothUUID {
        switch operation {
        case .writeWithoutResponse: return Sample.writeNoResponse
        case .notify: return Sample.notify
        default: return Sample.readWrite
        }
    }

    func armBefore() {
        Matrix.arm(fault, on: bench.simulator)
        let faults = bench.simulator.faults
        switch (fault, operation) {
        case (.linkLoss, .connect): faults.failConnect(Sample.address, with: .abortByLocal, times: 1)
        case (.connectTransient, _): faults.failConnect(Sample.address, with: .abortByLocal, times: 1)
        case (.connectPermanent, _): faults.failConnect(Sample.address, with: .abortByLocal, times: nil)
        case (.neverReply, .connect): faults.failConnect(Sample.address, with: .neverAnswer, times: 1)
        case (.neverReply, .scan): faults.neverReply(to: "StartDiscovery", times: 1)
        case (.neverReply, _): if let member = operation.heldMember { faults.neverReply(to: member, times: 1) }
        default: break
        }
    }

    func issue() {
        let central = bench.central!
        switch operation {
        case .scan: central.scanForPeripherals(withServices: nil)
        case .connect: central.connect(peripheral!)
        case .discover: peripheral!.discoverServices(nil)
        case .read: peripheral!.readValue(for: target!)
        case .writeWithResponse: peripheral!.writeValue(Data([0x42]), for: target!, type: .withResponse)
        case .writeWithoutResponse: peripheral!.writeValue(Data([0x43]), for: target!, type: .withoutResponse)
        case .notify: peripheral!.setNotifyValue(true, for: target!)
        case .dslCommand, .servedRead, .servedWrite, .servedNotify: break
        case .asyncCall:
            let manager = asyncManager!, peripheral = peripheral!, target = target, endings = sideEndings, connects = asyncConnects
            Task { @BleLoop in
                do {
                    if connects {
                        _ = try await manager.connect(peripheral, timeout: 10)
                    } else {
                        guard let device = await manager.asyncPeripheral(for: peripheral), let target else {
                            return endings.append(.peripheralNotConnected)
                        }
                        _ = try await device.read(for: target, timeout: 5)
                    }
                    endings.append(.success)
                } catch {
                    endings.append(Self.asyncOutcome(error))
                }
            }
        case .pairing:
            let endings = sideEndings
            peripheral!.pair(timeout: .seconds(2)) { error in endings.appendFromAnyThread(Outcome(error)) }
        }
    }

    static func asyncOutcome(_ error: Error) -> Outcome {
        guard let error = error as? AsyncBleClientError else { return .otherError }
        switch error {
        case .timeout: return .timeout
        case .operationFailed(_, let inner): return Outcome(inner)
        case .connectFailed(_, let inner): return inner.map { Outcome($0) } ?? .connectionFailed
        case .disconnected(_, let inner): return inner.map { Outcome($0) == .bluetoothRestarted ? .bluetoothRestarted : .disconnected } ?? .disconnected
        case .bluetoothUnavailable: return .poweredOff
        default: return .otherError
        }
    }

    /// The pairing's agent runs on a bus connection of its own and is bluetoothd's default
    /// agent: it answers the central's `pair()` (numeric comparison with the peer's display).
    func startAgent() async throws {
        bench.simulator.setPairing(PeerPairing(capability: "KeyboardDisplay"), for: Sample.address)
        let agent = PairingAgent(options: CentralManagerOptions(bus: .address(bench.busAddress)), capability: .keyboardDisplay,
                                 delegate: pairingAnswers, makeDefault: true, requestTimeout: .seconds(2))
        self.agent = agent
        agent.start()
        try await eventually("the agent registered") { agent.isRegistered }
    }

    /// Every question the agent was asked ends once (answered, cancelled by bluetoothd or by
    /// its deadline); the app's late answer is ignored.
    func pairingQuestionsEnded() async throws {
        let asked = pairingAnswers.requests.events
        try await eventually("\(cell): the agent's questions ended", timeout: .seconds(10)) { asked.allSatisfy(\.isAnswered) }
        for request in asked { request.accept() }
    }

    func issueAndStrike() async throws {
        let faults = bench.simulator.faults
        guard fault.strikesInFlight, !(fault == .linkLoss && operation == .connect) else { return issue() }
        if operation == .pairing {
            // In flight: the agent holds its question while the fault strikes.
            pairingAnswers.hold.value = true
            issue()
            try await pairingAnswers.requests.wait("the agent's question", timeout: .seconds(10)) { !$0.isEmpty }
            pairingAnswers.hold.value = false
            if fault == .peerExit {
                // The agent's process dies: its bus connection drops, nothing is cleaned up.
                agent?.session.connection?.close()
                return
            }
            return strike()
        }
        if let member = operation.heldMember {
            if operation == .connect {
                faults.failConnect(Sample.address, with: .neverAnswer, times: 1)
            } else {
                faults.neverReply(to: member, times: 1)
            }
            let calls = bench.calls.events.count
            issue()
            try await bench.calls.first(since: calls, timeout: .seconds(10), "a \(member) call") { $0 == member }
        } else {
            issue()
            if operation == .scan {
                try await bench.recorder.wait("a discovery") { if case .discovered = $0 { return true }; return false }
            }
        }
        strike()
    }

    func strike() {
        let simulator = bench.simulator
        switch fault {
        case .linkLoss, .servicesChanged: simulator.peripheral(Sample.address)?.dropLinks()
        case .restartClean: simulator.stop(.clean)
        case .restartKill: simulator.stop(.kill)
        case .powerCycle: simulator.adapter("hci0")?.setPowered(false)
        case .adapterRemoval: simulator.removeAdapter("hci0")
        case .deviceExpiry: simulator.removePeripheral(Sample.address)
        default: break
        }
    }

    /// The event that ends the operation.
    func completes(_ event: Event) -> Bool {
        switch (operation, event) {
        case (.scan, .discovered(let p, _, _)): return p.address == Sample.address
        case (.scan, .scanFailed): return true
        case (.connect, .connected(let p)), (.connect, .failedToConnect(let p, _)): return p === peripheral
        case (.discover, .services(let p, _)): return p === peripheral
        case (.read, .value(let c, _, _)): return c === target
        case (.writeWithResponse, .wrote(let c, _)): return c === target
        case (.writeWithoutResponse, .wrote(let c, _)): return c === target
        case (.writeWithoutResponse, .readyToWrite): return true
        case (.notify, .notifyState(let c, _, _)): return c === target
        default: return false
        }
    }

    /// The completion events that may come once: for a write without response, readiness
    /// may follow its failure report, and counts separately.
    func completesOnce(_ event: Event) -> Bool {
        if operation == .writeWithoutResponse, case .readyToWrite = event { return false }
        return completes(event)
    }

    /// After a successful subscription, notifications arrive as the fault shapes them: each
    /// delivered once per arrival, none invented.
    func checkNotifications() async throws {
        let mark = bench.recorder.mark
        let virtual = bench.simulator.peripheral(Sample.address)!
        if fault == .notificationBeforeReply {
            try await bench.recorder.wait("the early notification") {
                if case .value(let c, let d, nil) = $0 { return c === self.target && d == Matrix.early }
                return false
            }
            #expect(bench.recorder.count { if case .value(let c, let d, nil) = $0 { return c === self.target && d == Matrix.early }; return false } == 1)
            return
        }
        for value in Matrix.notifyValues { virtual.notify("ff02", value: Data([value])) }
        // A marker after the faulted ones: once it arrived, everything before it has too.
        bench.simulator.faults.setNotificationFault(Sample.address, nil)
        virtual.notify("ff02", value: Data([0xFF]))
        try await bench.recorder.wait(since: mark, "the marker notification") {
            if case .value(let c, let d, _) = $0 { return c === self.target && d == Data([0xFF]) }
            return false
        }
        var seen: [UInt8] = []
        for event in bench.recorder.events.dropFirst(mark) {
            if case .value(let c, let d?, nil) = event, c === target, d != Data([0xFF]) { seen += Array(d) }
        }
        var expected = Matrix.expectedNotifications(fault)
        // A reordering fault still holds the last of an odd count: none here (four values).
        if fault == .notificationsReordered { expected = [2, 1, 4, 3] }
        #expect(seen == expected, "\(cell): notifications \(seen)")
    }

    func recover() async throws {
        let simulator = bench.simulator
        switch fault {
        case .restartClean, .restartKill:
            simulator.faults.clear()
            let mark = bench.recorder.mark
            try await simulator.start(on: bench.fixture.bus.busAddress)
            try await bench.recorder.wait(since: mark, "poweredOn after the restart") { if case .state(.poweredOn) = $0 { return true }; return false }
        case .powerCycle:
            if bench.central.state == .poweredOn {
                try await bench.recorder.wait("poweredOff") { if case .state(.poweredOff) = $0 { return true }; return false }
            }
            let mark = bench.recorder.mark
            simulator.adapter("hci0")?.setPowered(true)
            try await bench.recorder.wait(since: mark, "poweredOn") { if case .state(.poweredOn) = $0 { return true }; return false }
        case .adapterRemoval:
            let mark = bench.recorder.mark
            simulator.addAdapter(Simulator.AdapterSpec(index: 0))
            try await bench.recorder.wait(since: mark, "poweredOn") { if case .state(.poweredOn) = $0 { return true }; return false }
        case .deviceExpiry:
            simulator.faults.clear()
            if let peripheral, peripheral.state != .disconnected {
                try await bench.recorder.wait("the disconnect") { if case .disconnected = $0 { return true }; return false }
            }
            simulator.addPeripheral(Matrix.spec(for: fault))
        case .connectPermanent:
            // The reconnect keeps failing with the documented reason until the fault clears.
            if operation != .connect, let peripheral {
                try await disconnect(peripheral)
                let mark = bench.recorder.mark
                bench.central.connect(peripheral)
                let event = try await bench.recorder.wait(since: mark, "the failed reconnect") {
                    if case .failedToConnect(let p, _) = $0 { return p === peripheral }
                    if case .connected(let p) = $0 { return p === peripheral }
                    return false
                }
                #expect(Outcome(event.error) == .connectionFailed, "\(cell): reconnect \(event)")
            }
            simulator.faults.clear()
        case .connectTransient:
            // The reconnect is retried past the transient failure.
            if operation != .connect, let peripheral {
                try await disconnect(peripheral)
                simulator.faults.failConnect(Sample.address, with: .abortByLocal, times: 1)
                try await bench.connect(peripheral)
            }
            simulator.faults.clear()
        default:
            simulator.faults.clear()
        }
    }

    func disconnect(_ peripheral: Peripheral) async throws {
        try await bench.disconnect(peripheral)
    }

    /// The next operations work: scan, connect, discover, read, and notifications for the notify column.
    func laterOperationsWork() async throws {
        bench.central.stopScan()
        // bluetoothd that restarted, or an adapter that came back, knows no devices until a scan.
        if peripheral == nil || [.deviceExpiry, .restartClean, .restartKill, .adapterRemoval].contains(fault) || operation == .scan {
            peripheral = try await freshDiscovery()
        }
        guard let peripheral else { return }
        if peripheral.state != .connected {
            if peripheral.state == .connecting { try await disconnect(peripheral) }
            try await bench.connect(peripheral)
        }
        try await bench.resolve(peripheral)
        let rw = bench.characteristic(peripheral, Sample.readWrite)
        let mark = bench.recorder.mark
        peripheral.readValue(for: rw)
        let read = try await bench.recorder.wait(since: mark, "a read after the fault") {
            if case .value(let c, _, _) = $0 { return c === rw }
            return false
        }
        #expect(read.error == nil, "\(cell): read after recovery: \(read)")
        if fault == .servicesChanged, ![.scan, .connect].contains(operation) {
            #expect(peripheral.services?.contains { $0.uuid == BluetoothUUID(string: "ee00") } == true, "\(cell): new services not seen")
            if let stale = target, stale !== bench.characteristic(peripheral, targetUUID) {
                let staleMark = bench.recorder.mark
                peripheral.readValue(for: stale)
                let event = try await bench.recorder.wait(since: staleMark, "a read of a stale characteristic") {
                    if case .value(let c, _, _) = $0 { return c === stale }
                    return false
                }
                #expect(event.error != nil, "\(cell): a characteristic of the old tree still reads")
            }
        }
        if operation == .pairing, !peripheral.isPaired {
            if fault == .peerExit || agent?.isRegistered != true {
                agent?.stop()
                try await startAgent()
            }
            bench.simulator.setPairing(PeerPairing(capability: "KeyboardDisplay"), for: Sample.address)
            let results = EventRecorder<BleError?>()
            peripheral.pair(timeout: .seconds(5)) { results.appendFromAnyThread($0) }
            try await results.wait("a pairing after the fault", timeout: .seconds(10)) { !$0.isEmpty }
            #expect(results.events[0] == nil, "\(cell): pairing after recovery: \(String(describing: results.events[0]))")
        }
        if operation == .asyncCall, let asyncManager {
            let device = try #require(await asyncManager.asyncPeripheral(for: peripheral), "\(cell): no async peripheral")
            let value = try await device.read(for: rw, timeout: 5)
            #expect(!value.isEmpty, "\(cell): async read after recovery")
        }
        if operation == .notify {
            let notify = bench.characteristic(peripheral, Sample.notify)
            let on = bench.recorder.mark
            if !notify.isNotifyingOnLoop {
                peripheral.setNotifyValue(true, for: notify)
                try await bench.recorder.wait(since: on, "notifications on again") {
                    if case .notifyState(let c, true, nil) = $0 { return c === notify }
                    return false
                }
            }
            bench.simulator.peripheral(Sample.address)?.notify("ff02", value: Data([0x77]))
            try await bench.recorder.wait(since: on, "a notification after the fault") {
                if case .value(let c, let d, nil) = $0 { return c === notify && d == Data([0x77]) }
                return false
            }
        }
    }

    /// Scans until the device is reported by this scan (not an earlier one).
    func freshDiscovery() async throws -> Peripheral {
        try await bench.freshDiscovery(of: Sample.address, "a new discovery")
    }

    func quiesce() async throws {
        bench.central.stopScan()
        if let peripheral { try await disconnect(peripheral) }
        try await roundTrip()
        try await roundTrip()
    }
}

/// One cell against the DSL: a BleManager session with a reconnect policy, and the command
/// engine with one command in flight.
@BleLoop
final class DSLCell {
    let cell: MatrixCell
    var fault: MatrixFault { cell.fault }

    init(_ cell: MatrixCell) { self.cell = cell }

    func run() async throws -> Outcome {
        let fixture = try await SimulatorFixture.start(peripherals: [Logger.spec()], configuration: Matrix.configuration(fault))
        let stack = DSLStack(fixture: fixture)
        defer { stack.tearDown() }
        let policy = ReconnectPolicy.exponentialBackoff(initialDelay: 0.05, multiplier: 2, maximumDelay: 0.5, maximumAttempts: 40)
        try await stack.connect(extra: [.reconnect(policy), .connectTimeout(3)])
        let simulator = fixture.simulator
        switch fault {
        case .notificationsDropped: simulator.faults.setNotificationFault(Logger.address, .dropEvery(2))
        case .notificationsDuplicated: simulator.faults.setNotificationFault(Logger.address, .duplicate)
        case .notificationsReordered: simulator.faults.setNotificationFault(Logger.address, .reorderPairs)
        case .accessDenied: simulator.faults.denyAccessToEveryone()
        case .neverReply: simulator.faults.neverReply(to: "WriteValue", times: nil); simulator.faults.neverReply(to: "AcquireWrite", times: nil)
        case .connectTransient: simulator.faults.failConnect(Logger.address, with: .abortByLocal, times: 1)
        case .connectPermanent: simulator.faults.failConnect(Logger.address, with: .abortByLocal, times: 3)
        default: break
        }
        let results = EventRecorder<Result<[Data], Error>>()
        let command: PeripheralOperationCommand
        if fault.strikesInFlight {
            // 03: the logger stays silent, so the command is still waiting when the fault hits.
            command = CollectCommand(cmdData: Data([0x03]), packets: 1, timeOutInterval: 10)
        } else if fault == .notificationsDropped {
            command = CollectCommand(cmdData: Data([0x02, 0x01]), packets: 1, timeOutInterval: 10)
        } else {
            command = CollectCommand(cmdData: Data([0x02, 0x01]), packets: 1, timeOutInterval: 5)
        }
        let writes = EventRecorder<Data>()
        simulator.peripheral(Logger.address)?.onWrite = { write, _ in writes.append(write.value) }
        let central = stack.manager.centralManager.centralManager
        let recorder = Recorder()
        central.multiDelegate.addDelegate(recorder)
        stack.engine.executable(option: command) { results.appendFromAnyThread($0) }
        let struck = recorder.mark
        if fault.strikesInFlight {
            try await writes.wait("the command's write", timeout: .seconds(10)) { !$0.isEmpty }
            strike(simulator)
        }
        try await results.wait("the command's result", timeout: .seconds(20)) { $0.count >= 1 }
        let outcome = Self.outcome(results.events[0])
        #expect(cell.allowed.contains(outcome), "\(cell) ended with \(results.events[0]); allowed: \(cell.allowed)")
        // Undo the fault; the session's reconnect policy brings the link back by itself.
        switch fault {
        case .restartClean, .restartKill:
            simulator.faults.clear()
            try await simulator.start(on: fixture.bus.busAddress)
        case .powerCycle: simulator.adapter("hci0")?.setPowered(true)
        case .adapterRemoval: simulator.addAdapter(Simulator.AdapterSpec(index: 0))
        case .deviceExpiry: simulator.addPeripheral(Logger.spec())
        default: simulator.faults.clear()
        }
        if [.restartClean, .restartKill, .adapterRemoval].contains(fault) {
            // bluetoothd forgot the device: the policy's reconnects fail until it is scanned
            // again, which the app does by connecting anew (RELIABILITY.md, limitations).
            if central.currentState != .poweredOn {
                try await recorder.wait(since: struck, "poweredOn again") { if case .state(.poweredOn) = $0 { return true }; return false }
            }
            stack.manager.cancelAll()
            let connected = EventRecorder<String>()
            stack.manager.execute(commandItems: [.connect(.uuid(Logger.address.lowercased())), .handle(stack.device), .scanTimeout(TestTime.scaled(10))]) {
                if case .success(.connected) = $0 { connected.appendFromAnyThread("connected") }
            }
            try await connected.wait("connected again", timeout: .seconds(20)) { !$0.isEmpty }
        }
        // The next command works once the engine is ready again (after the reconnect).
        let ready = EventRecorder<Bool>()
        stack.adapter.readyForCommand { _ in ready.appendFromAnyThread(true) }
        try await ready.wait("the engine ready again", timeout: .seconds(30)) { !$0.isEmpty }
        // 05: the echo's opcode differs from the faulted command's, so a late answer to that one
        // cannot be mistaken for this one's.
        let next = try await stack.run(EchoCommand(cmdData: Data([0x05, 0x07])))
        #expect(next.value == [Data([0x05, 0x07])], "\(cell): the next command got \(next)")
        #expect(results.events.count == 1, "\(cell): the command completed \(results.events.count) times")
        #expect(stack.engine.pendingCommandCount == 0)
        let mark = recorder.mark
        stack.manager.cancelAll()
        for peripheral in central.peripheralsByAddress.values where peripheral.currentState != .disconnected {
            central.cancelPeripheralConnection(peripheral)
            try await recorder.wait(since: mark, "the disconnect") {
                if case .disconnected(let p, _) = $0 { return p === peripheral }
                if case .failedToConnect(let p, _) = $0 { return p === peripheral }
                return false
            }
        }
        if let connection = central.dbusConnection {
            _ = try await connection.call(destination: "org.bluez", path: "/", interface: "org.freedesktop.DBus.Peer", member: "Ping")
        }
        let after = central.currentDiagnostics
        #expect(after.pendingOperations == 0 && after.notifySubscriptions == 0 && after.fileDescriptors == 0
                    && after.connection.pendingCalls == 0, "\(cell): left \(after)")
        return outcome
    }

    func strike(_ simulator: Simulator) {
        switch fault {
        case .linkLoss, .servicesChanged: simulator.peripheral(Logger.address)?.dropLinks()
        case .restartClean: simulator.stop(.clean)
        case .restartKill: simulator.stop(.kill)
        case .powerCycle: simulator.adapter("hci0")?.setPowered(false)
        case .adapterRemoval: simulator.removeAdapter("hci0")
        case .deviceExpiry: simulator.removePeripheral(Logger.address)
        default: break
        }
    }

    static func outcome(_ result: Result<[Data], Error>) -> Outcome {
        switch result {
        case .success: return .success
        case .failure(let error as PeripheralCommandError):
            switch error {
            case .disconnected: return .disconnected
            case .timeout: return .timeout
            case .writeFailed(let inner), .notificationFailed(let inner), .subscribeFailed(let inner):
                let mapped = Outcome(inner)
                return mapped == .success ? .otherError : mapped
            default: return .otherError
            }
        case .failure(let error as BleError): return Outcome(error)
        case .failure: return .otherError
        }
    }
}
