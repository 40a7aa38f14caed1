@testable import BleCore
import BleDBus
@testable import BleSim
import BleTestSupport
import Foundation
import Testing

/// The service a `PeripheralManager` serves in the matrix: a dynamic read/write
/// characteristic (the app answers every request) and a notify one.
enum Served {
    static let service = BluetoothUUID(string: "5eed0001-0000-1000-8000-00805f9b34fb")
    static let request = BluetoothUUID(string: "5eed0002-0000-1000-8000-00805f9b34fb")
    static let notify = BluetoothUUID(string: "5eed0003-0000-1000-8000-00805f9b34fb")
    /// Only in the service that replaces the first one (the servicesChanged row).
    static let extra = BluetoothUUID(string: "5eed0004-0000-1000-8000-00805f9b34fb")
    /// hci0's address in BleSim: where the app serves.
    static let serverAddress = "00:AA:01:00:00:00"
    static let readValue = Data([0x5A])
    static let inFlight = Data([0x31])

    static func makeService(extra: Bool) -> (MutableService, request: MutableCharacteristic, notify: MutableCharacteristic) {
        let service = MutableService(type: Served.service, primary: true)
        let request = MutableCharacteristic(type: Served.request, properties: [.read, .write], value: nil, permissions: [.readable, .writeable])
        let notify = MutableCharacteristic(type: Served.notify, properties: [.notify, .read], value: nil, permissions: [.readable])
        var characteristics = [request, notify]
        if extra {
            characteristics.append(MutableCharacteristic(type: Served.extra, properties: [.read], value: Data([0xEE]), permissions: [.readable]))
        }
        service.characteristics = characteristics
        return (service, request, notify)
    }
}

/// The app's side: records its events and requests, answers them at once unless told to hold
/// them (the request is then in flight when the fault strikes).
final class ServedRecorder: PeripheralManagerDelegate, Sendable {
    let events: EventRecorder<String>
    let requests: EventRecorder<ATTRequest>
    @BleLoop var hold = false

    @BleLoop init() {
        events = EventRecorder<String>()
        requests = EventRecorder<ATTRequest>()
    }

    private func record(_ text: String) { BleLoop.assumeIsolated { events.append(text) } }

    func peripheralManagerDidUpdateState(_ peripheral: PeripheralManager) {
        BleLoop.assumeIsolated { events.append("state \(peripheral.currentState)") }
    }
    func peripheralManager(_ peripheral: PeripheralManager, didAdd service: Service, error: Error?) {
        record("added \(service.uuid) \(error.map { "\($0)" } ?? "ok")")
    }
    func peripheralManagerDidStartAdvertising(_ peripheral: PeripheralManager, error: Error?) {
        record("advertising \(error.map { "\($0)" } ?? "ok")")
    }
    func peripheralManager(_ peripheral: PeripheralManager, central: Central, didSubscribeTo characteristic: Characteristic) {
        record("subscribed \(characteristic.uuid)")
    }
    func peripheralManager(_ peripheral: PeripheralManager, central: Central, didUnsubscribeFrom characteristic: Characteristic) {
        record("unsubscribed \(characteristic.uuid)")
    }
    func peripheralManagerIsReady(toUpdateSubscribers peripheral: PeripheralManager) { record("ready") }
    func peripheralManager(_ peripheral: PeripheralManager, didReceiveRead request: ATTRequest) {
        BleLoop.assumeIsolated {
            requests.append(request)
            guard !hold else { return }
            request.value = Served.readValue
            _ = peripheral.answer(request, .success)
        }
    }
    func peripheralManager(_ peripheral: PeripheralManager, didReceiveWrite requests: [ATTRequest]) {
        BleLoop.assumeIsolated {
            for request in requests {
                self.requests.append(request)
                if !hold { _ = peripheral.answer(request, .success) }
            }
        }
    }
}

/// One cell with two roles on this machine: a `PeripheralManager` serving on hci0 (its own bus
/// connection, as its own process would have) and a BleCore central on hci1 using it. The
/// served columns check the app's side (each request answered once, by the app or its
/// deadline; counts back to zero) as well as the central's; the peerExit row for the central's
/// read and write has the app's process exit with the request open.
@BleLoop
final class RoleCell {
    let cell: MatrixCell
    var fault: MatrixFault { cell.fault }
    var operation: MatrixOperation { cell.operation }
    var bench: Bench!
    var server: PeripheralManager!
    let served = ServedRecorder()
    var serverCharacteristics: (request: MutableCharacteristic, notify: MutableCharacteristic)!
    var peripheral: Peripheral?
    var target: Characteristic?
    /// The central's process exited (peerExit on a served column): a new one takes over.
    var centralExited = false
    /// The app's process exited (peerExit on a central column): a new one takes over.
    var serverExited = false
    var advertisement: AdvertisementRegistration?

    init(_ cell: MatrixCell) { self.cell = cell }

    var busText: String { bench.busAddress }

    func run() async throws -> Outcome {
        let fixture = try await SimulatorFixture.start(peripherals: [])
        bench = Bench(fixture: fixture)
        let calls = bench.calls
        fixture.simulator.traceObserver = { calls.append($0.member) }
        bench.central = bench.makeCentral(configure: Self.centralOptions)
        defer {
            server?.close()
            bench.tearDown()
        }
        try await bench.recorder.wait("poweredOn") { if case .state(.poweredOn) = $0 { return true }; return false }
        try await startServer()
        peripheral = try await bench.connected(Served.serverAddress)
        target = bench.characteristic(peripheral!, operation == .servedNotify ? Served.notify : Served.request)
        if operation == .servedNotify { try await subscribe() }
        try await roundTrip()
        let centralBaseline = bench.central.currentDiagnostics

        arm()
        let mark = bench.recorder.mark
        let requestMark = served.requests.events.count
        let outcome: Outcome
        if operation == .servedNotify {
            outcome = try await notifyAndStrike(since: mark)
        } else {
            issue()
            if fault.strikesInFlight || fault == .neverReply {
                try await served.requests.wait("the request at the app", timeout: .seconds(10)) { $0.count > requestMark }
            }
            if fault.strikesInFlight { strike() }
            let held = Array(served.requests.events.dropFirst(requestMark))
            // The app answers late: once the deadline or the fault ended the request, the answer
            // is refused; a request still open takes it.
            if fault != .neverReply, !serverExited {
                for request in held {
                    request.value = Served.readValue
                    _ = server.answer(request, .success)
                }
            }
            let ending = try await bench.recorder.wait(since: mark, timeout: .seconds(20), "the end of the central's request", where: completes)
            outcome = Outcome(ending.error)
            try await roundTrip()
            let completions = bench.recorder.count(since: mark, where: completes)
            #expect(completions <= 1, "\(cell): \(completions) completions")
            if !serverExited {
                // Each request ends once: by the app, by its deadline, or with the fault.
                try await eventually("\(cell): every request answered") { held.allSatisfy(\.answered) }
                for request in held { #expect(!server.answer(request, .success), "\(cell): a request was answered twice") }
            }
        }
        #expect(cell.allowed.contains(outcome), "\(cell) ended with \(outcome); allowed: \(cell.allowed)")
        try await recover()
        try await laterOperationsWork()
        try await quiesce()
        let after = bench.central.currentDiagnostics
        #expect(after.pendingOperations == 0 && after.notifySubscriptions == 0 && after.timers == 0 && after.fileDescriptors == 0
                    && after.connection.pendingCalls == 0, "\(cell): the central left \(after)")
        if !centralExited {
            #expect(after.connection.matchRules == centralBaseline.connection.matchRules
                        && after.connection.signalSubscriptions == centralBaseline.connection.signalSubscriptions,
                    "\(cell): central bus state \(after.connection), before \(centralBaseline.connection)")
        }
        return outcome
    }

    static func centralOptions(_ options: inout CentralManagerOptions) {
        options.adapter = "hci1"
        // Longer than the app's request deadline (1 s), which must answer first.
        options.operationTimeout = .seconds(4)
        options.connectTimeout = .seconds(5)
        options.connectRetries = 2
        options.bluetoothdReturnTimeout = .seconds(60)
    }

    // MARK: Setting up

    func startServer() async throws {
        let stateMark = served.events.events.count
        server = PeripheralManager(delegate: served, queue: nil, options: PeripheralManagerOptions(
            bus: .address(busText), adapter: "hci0", requestTimeout: .seconds(1), acquireSockets: false, notificationWindow: 1,
            sharesBusConnection: false))
        try await served.events.wait("the app powered on", timeout: .seconds(10)) { $0.dropFirst(stateMark).contains("state poweredOn") }
        let (service, request, notify) = Served.makeService(extra: false)
        serverCharacteristics = (request, notify)
        server.add(service)
        try await served.events.wait("the service added", timeout: .seconds(10)) { $0.dropFirst(stateMark).contains { $0.hasPrefix("added") } }
        #expect(served.events.events.dropFirst(stateMark).contains("added \(Served.service) ok"), "\(served.events.events)")
        // Held: a registration released is an advertisement cancelled.
        let registration = server.startAdvertising(Advertisement(localName: "matrix-server", serviceUUIDs: [Served.service]))
        advertisement = registration
        try await eventually("advertising (\(served.events.events))") { registration.state == .active }
    }

    func subscribe() async throws {
        guard let peripheral, let target else { return }
        let mark = bench.recorder.mark
        let serverMark = served.events.events.count
        peripheral.setNotifyValue(true, for: target)
        try await bench.recorder.wait(since: mark, "notifications on") {
            if case .notifyState(let c, true, nil) = $0 { return c === target }
            return false
        }
        try await served.events.wait("the app saw the subscription", timeout: .seconds(10)) {
            $0.dropFirst(serverMark).contains("subscribed \(Served.notify)")
        }
    }

    func roundTrip() async throws {
        guard let connection = bench.central.dbusConnection, connection.isOpen, bench.simulator.isRunning else { return }
        _ = try await connection.call(destination: "org.bluez", path: "/", interface: "org.freedesktop.DBus.Peer", member: "Ping")
    }

    // MARK: The fault

    func arm() {
        let faults = bench.simulator.faults
        switch fault {
        case .accessDenied: faults.denyAccessToEveryone()
        case .neverReply:
            // The app never answers: its request deadline must.
            served.hold = true
        default:
            if fault.strikesInFlight { served.hold = true }
        }
    }

    func issue() {
        guard let peripheral, let target else { return }
        switch operation {
        case .servedWrite, .writeWithResponse: peripheral.writeValue(Data([0x42]), for: target, type: .withResponse)
        default: peripheral.readValue(for: target)
        }
    }

    func completes(_ event: Event) -> Bool {
        switch (operation, event) {
        case (.servedWrite, .wrote(let c, _)), (.writeWithResponse, .wrote(let c, _)): return c === target
        case (.servedRead, .value(let c, _, _)), (.read, .value(let c, _, _)): return c === target
        default: return false
        }
    }

    func strike() {
        let simulator = bench.simulator
        switch fault {
        case .linkLoss: simulator.adapter("hci1")?.devices[Served.serverAddress]?.linkLost(reason: "fault: link loss")
        case .restartClean: simulator.stop(.clean)
        case .restartKill: simulator.stop(.kill)
        case .powerCycle: simulator.adapter("hci0")?.setPowered(false)
        case .adapterRemoval: simulator.removeAdapter("hci0")
        case .servicesChanged:
            // The app replaces its service while a request is open.
            server.removeAllServices()
            let (service, request, notify) = Served.makeService(extra: true)
            serverCharacteristics = (request, notify)
            server.add(service)
        case .peerExit:
            if operation.isServed {
                // The central's process dies: its bus connection drops, nothing is cleaned up.
                centralExited = true
                bench.central.dbusConnection?.close()
            } else {
                serverExited = true
                server.dbusConnection?.close()
            }
        default: break
        }
    }

    /// A notification sent, the fault striking before bluetoothd read it: it reaches the central
    /// (`success`) or the link's end is reported (`disconnected`); never lost without a word.
    func notifyAndStrike(since mark: Int) async throws -> Outcome {
        guard let target else { return .otherError }
        #expect(server.sendUpdate(Served.inFlight, for: serverCharacteristics.notify, to: nil), "\(cell): updateValue refused")
        if fault.strikesInFlight { strike() }
        // The app's window reopens: bluetoothd read it, or the ping's deadline gave up.
        try await eventually("\(cell): the notification no longer in flight", timeout: .seconds(20)) {
            self.server.currentDiagnostics.notificationsInFlight == 0
        }
        try await roundTrip()
        let arrived = bench.recorder.count(since: mark) {
            if case .value(let c, let d, nil) = $0 { return c === target && d == Served.inFlight }
            return false
        }
        #expect(arrived <= 1, "\(cell): the notification arrived \(arrived) times")
        if arrived == 1 { return .success }
        if centralExited { return .dbus }
        let ended = try await bench.recorder.wait(since: mark, timeout: .seconds(20), "the link's end reported") {
            if case .disconnected = $0 { return true }
            if case .state(let state) = $0 { return state != .poweredOn }
            // The app removed the service: the central hears its services changed.
            if case .modified = $0 { return true }
            return false
        }
        if case .modified = ended { return .attributeGone }
        if case .disconnected(_, let error) = ended { return error.map { Outcome($0) } ?? .disconnected }
        return .disconnected
    }

    // MARK: Recovery

    func recover() async throws {
        let simulator = bench.simulator
        served.hold = false
        switch fault {
        case .restartClean, .restartKill:
            simulator.faults.clear()
            let mark = bench.recorder.mark
            let serverMark = served.events.events.count
            try await simulator.start(on: bench.fixture.bus.busAddress)
            if !centralExited {
                try await bench.recorder.wait(since: mark, "poweredOn after the restart") { if case .state(.poweredOn) = $0 { return true }; return false }
            }
            if !serverExited {
                try await served.events.wait("the app powered on again", timeout: .seconds(20)) { $0.dropFirst(serverMark).contains("state poweredOn") }
                try await eventually("the app registered again") { self.server.application.registered }
            }
        case .powerCycle:
            let serverMark = served.events.events.count
            simulator.adapter("hci0")?.setPowered(true)
            try await served.events.wait("the app powered on again", timeout: .seconds(20)) { $0.dropFirst(serverMark).contains("state poweredOn") }
        case .adapterRemoval:
            let serverMark = served.events.events.count
            _ = simulator.addAdapter(Simulator.AdapterSpec(index: 0))
            try await served.events.wait("the app powered on again", timeout: .seconds(20)) { $0.dropFirst(serverMark).contains("state poweredOn") }
            try await eventually("the app registered again") { self.server.application.registered }
        case .connectPermanent:
            if let peripheral {
                try await disconnect(peripheral)
                simulator.faults.failConnect(Served.serverAddress, with: .abortByLocal, times: nil)
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
            if let peripheral {
                try await disconnect(peripheral)
                simulator.faults.failConnect(Served.serverAddress, with: .abortByLocal, times: 1)
                try await bench.connect(peripheral)
            }
            simulator.faults.clear()
        case .peerExit:
            if centralExited {
                bench.central.close()
                bench.central = bench.makeCentral(configure: Self.centralOptions)
                try await bench.recorder.wait(since: bench.recorder.mark, "the new central powered on") {
                    if case .state(.poweredOn) = $0 { return true }; return false
                }
                peripheral = nil
            }
            if serverExited {
                server.close()
                try await startServer()
            }
        default:
            simulator.faults.clear()
        }
    }

    func disconnect(_ peripheral: Peripheral) async throws {
        try await bench.disconnect(peripheral)
    }

    /// The next requests are served: a fresh scan when BlueZ forgot the device, then a read
    /// answered by the app, a write it receives, and a notification that arrives.
    func laterOperationsWork() async throws {
        bench.central.stopScan()
        if peripheral == nil || [.restartClean, .restartKill, .adapterRemoval, .powerCycle].contains(fault) || serverExited {
            if let peripheral { try await disconnect(peripheral) }
            peripheral = try await freshDiscovery()
        }
        guard let peripheral else { return }
        if peripheral.state != .connected {
            if peripheral.state == .connecting { try await disconnect(peripheral) }
            try await bench.connect(peripheral)
        }
        try await bench.resolve(peripheral)
        let request = try #require(peripheral.characteristicsByPath.values.first { $0.uuid == Served.request },
                                   "\(cell): no request characteristic after the fault")
        var mark = bench.recorder.mark
        peripheral.readValue(for: request)
        let read = try await bench.recorder.wait(since: mark, "a served read after the fault") {
            if case .value(let c, _, _) = $0 { return c === request }
            return false
        }
        #expect(read.error == nil, "\(cell): read after recovery: \(read)")
        if case .value(_, let value, nil) = read { #expect(value == Served.readValue, "\(cell): read \(String(describing: value))") }
        let writes = served.requests.events.count
        mark = bench.recorder.mark
        peripheral.writeValue(Data([0x43]), for: request, type: .withResponse)
        let wrote = try await bench.recorder.wait(since: mark, "a served write after the fault") {
            if case .wrote(let c, _) = $0 { return c === request }
            return false
        }
        #expect(wrote.error == nil, "\(cell): write after recovery: \(wrote)")
        #expect(served.requests.events.dropFirst(writes).contains { $0.value == Data([0x43]) }, "\(cell): the app did not get the write")
        if fault == .servicesChanged {
            #expect(peripheral.characteristicsByPath.values.contains { $0.uuid == Served.extra }, "\(cell): the new service is not seen")
        }
        if operation == .servedNotify {
            let notify = try #require(peripheral.characteristicsByPath.values.first { $0.uuid == Served.notify })
            target = notify
            let on = bench.recorder.mark
            if !notify.isNotifyingOnLoop { try await subscribe() }
            let value = Data([0x77])
            try await eventually("room to notify") { self.server.sendUpdate(value, for: self.serverCharacteristics.notify, to: nil) }
            try await bench.recorder.wait(since: on, "a notification after the fault") {
                if case .value(let c, let d, nil) = $0 { return c === notify && d == value }
                return false
            }
        }
    }

    func freshDiscovery() async throws -> Peripheral {
        try await bench.freshDiscovery(of: Served.serverAddress, "a new discovery of the app")
    }

    func quiesce() async throws {
        bench.central.stopScan()
        if let peripheral { try await disconnect(peripheral) }
        try await roundTrip()
        try await roundTrip()
        // The app's last ping may still be on its way.
        try await eventually("\(cell): the app quiescent (\(server.currentDiagnostics))") { self.server.currentDiagnostics.isQuiescent }
        let diagnostics = server.currentDiagnostics
        #expect(diagnostics.unansweredRequests == 0 && diagnostics.notificationsInFlight == 0 && diagnostics.timers == 0
                    && diagnostics.fileDescriptors == 0 && diagnostics.connection.pendingCalls == 0, "\(cell): the app left \(diagnostics)")
    }
}

/// Polls loop state with a deadline, yielding to the loop between checks (no sleeps); the
/// deadline is at the tests' clock (TestTime).
@BleLoop
func eventually(_ what: String, timeout: Duration = .seconds(10), _ condition: @BleLoop () async -> Bool) async throws {
    let end = ContinuousClock.now + TestTime.scaled(timeout)
    while !(await condition()) {
        guard ContinuousClock.now < end else { throw WaitTimeout(what: what, seen: []) }
        var timer: LoopTimer?
        await withCheckedContinuation { continuation in
            timer = LoopTimer.scheduled(after: .milliseconds(5)) { continuation.resume() }
        }
        timer?.cancel()
    }
}
