@testable import BleCore
import BleDBus
import BleSim
import BleTestSupport
import Foundation
import Testing

@Suite(.timeLimit(.minutes(TestTime.minutes(1))))
@BleLoop
struct RobustnessTests {
    /// One operation of every kind, and the event that ends it.
    static func issueEveryOperation(_ bench: Bench, _ peripheral: Peripheral) -> [(String, (Event) -> Bool)] {
        let rw = bench.characteristic(peripheral, Sample.readWrite)
        let notify = bench.characteristic(peripheral, Sample.notify)
        let indicate = bench.characteristic(peripheral, Sample.indicate)
        let descriptor = rw.discoveredDescriptors!.first { $0.uuid == Sample.userDescription }!
        indicate.prefersStartNotify = true
        peripheral.readValue(for: rw)
        peripheral.writeValue(Data([1]), for: bench.characteristic(peripheral, Sample.notify), type: .withResponse)
        peripheral.setNotifyValue(true, for: notify)  // AcquireNotify
        peripheral.setNotifyValue(true, for: indicate)  // StartNotify
        peripheral.readValue(for: descriptor)
        return [
            ("read", { if case .value(let c, _, let e?) = $0 { _ = e; return c === rw }; return false }),
            ("write", { if case .wrote(let c, _?) = $0 { return c === notify }; return false }),
            ("acquire notify", { if case .notifyState(let c, _, _?) = $0 { return c === notify }; return false }),
            ("start notify", { if case .notifyState(let c, _, _?) = $0 { return c === indicate }; return false }),
            ("descriptor read", { if case .descriptorValue(let d, _, _?) = $0 { return d === descriptor }; return false }),
        ]
    }

    @Test func everyOperationEndsAtItsDeadlineWhenBlueZNeverAnswers() async throws {  // pain point #14
        // The set-up (discovery, connect, resolve) must succeed within the same deadline, so it is
        // at the tests' clock; the never-answered calls end with `.timeout` at any scale.
        let bench = try await Bench.start { $0.operationTimeout = TestTime.scaled(.milliseconds(300)) }
        defer { bench.tearDown() }
        let peripheral = try await bench.connected()
        for member in ["ReadValue", "WriteValue", "AcquireNotify", "StartNotify"] {
            bench.simulator.faults.neverReply(to: member, times: nil)
        }
        let mark = bench.recorder.mark
        for (what, predicate) in Self.issueEveryOperation(bench, peripheral) {
            let event = try await bench.await(what, since: mark, predicate)
            guard case .timeout? = event.error else { Issue.record("\(what) ended with \(event)"); continue }
        }
        // The descriptor write queued behind the read on the same descriptor also ends.
        let descriptor = bench.characteristic(peripheral, Sample.readWrite).discoveredDescriptors!.first!
        peripheral.writeValue(Data([1]), for: descriptor)
        let event = try await bench.await("descriptor write", since: mark) { if case .descriptorWrote(_, _?) = $0 { return true }; return false }
        guard case .timeout? = event.error else { Issue.record("descriptor write ended with \(event)"); return }
    }

    @Test func disconnectFailsEveryPendingOperationAtOnce() async throws {  // pain point #23
        let bench = try await Bench.start()
        defer { bench.tearDown() }
        let peripheral = try await bench.connected()
        for member in ["ReadValue", "WriteValue", "AcquireNotify", "StartNotify"] {
            bench.simulator.faults.neverReply(to: member, times: nil)
        }
        let mark = bench.recorder.mark
        let expectations = Self.issueEveryOperation(bench, peripheral)
        // Let every call reach the simulator, then drop the link.
        _ = try await bench.fixture.call("/", "org.freedesktop.DBus.Peer", "Ping")
        bench.simulator.peripheral(Sample.address)?.dropLinks()
        try await bench.await("disconnect", since: mark) { if case .disconnected(_, .disconnected?) = $0 { return true }; return false }
        for (what, predicate) in expectations {
            let event = try await bench.await(what, since: mark, predicate)
            #expect(event.error == .disconnected, "\(what): \(event)")
        }
        #expect(peripheral.state == .disconnected)
    }

    @Test func operationsOnADisconnectedPeripheralFailAtOnce() async throws {  // pain point #23
        let bench = try await Bench.start()
        defer { bench.tearDown() }
        let peripheral = try await bench.connected()
        let rw = bench.characteristic(peripheral, Sample.readWrite)
        let mark = bench.recorder.mark
        bench.central.cancelPeripheralConnection(peripheral)
        peripheral.readValue(for: rw)
        let event = try await bench.await("read", since: mark) { $0.isValue }
        #expect(event.error == .disconnected || event.error == .peripheralNotConnected)
    }

    @Test func daemonRestartResetsFailsPendingAndResumesScan() async throws {  // pain point #15
        let bench = try await Bench.start()
        defer { bench.tearDown() }
        let peripheral = try await bench.connected()
        bench.simulator.faults.neverReply(to: "ReadValue", times: nil)
        let mark = bench.recorder.mark
        peripheral.readValue(for: bench.characteristic(peripheral, Sample.readWrite))
        bench.central.scanForPeripherals(withServices: nil)
        try await bench.await("scan", since: mark) { if case .discovered = $0 { return true }; return false }
        _ = try await bench.fixture.call("/", "org.freedesktop.DBus.Peer", "Ping")
        // SIGKILL: the only signal is NameOwnerChanged.
        bench.simulator.stop(.kill)
        try await bench.await("resetting", since: mark) { if case .state(.resetting) = $0 { return true }; return false }
        // The held call ends before NameOwnerChanged (its error reply comes first), so its error
        // is whatever the bus said; what matters is that it ended, once.
        let read = try await bench.await("read", since: mark) { $0.isValue }
        #expect(read.error != nil)
        let gone = try await bench.await("disconnect", since: mark) { if case .disconnected = $0 { return true }; return false }
        #expect(gone.error == .bluetoothRestarted)
        #expect(peripheral.state == .disconnected)
        #expect(bench.central.isScanning)
        let restart = bench.recorder.mark
        bench.simulator.faults.clear()
        try await bench.simulator.start(on: bench.fixture.bus.busAddress)
        try await bench.await("poweredOn", since: restart) { if case .state(.poweredOn) = $0 { return true }; return false }
        try await bench.await("scan resumed", since: restart) { if case .discovered = $0 { return true }; return false }
        bench.central.stopScan()
        try await bench.connect(peripheral)
        try await bench.resolve(peripheral)
        let again = bench.recorder.mark
        peripheral.readValue(for: bench.characteristic(peripheral, Sample.readWrite))
        let value = try await bench.await("read after restart", since: again) { $0.isValue }
        #expect(value.error == nil)
    }

    @Test func cleanDaemonStopAlsoReportsDisconnection() async throws {  // pain point #15
        let bench = try await Bench.start()
        defer { bench.tearDown() }
        _ = try await bench.connected()
        let mark = bench.recorder.mark
        bench.simulator.stop(.clean)
        try await bench.await("disconnect", since: mark) { if case .disconnected = $0 { return true }; return false }
        try await bench.await("not powered on", since: mark) {
            if case .state(let s) = $0 { return s == .resetting || s == .poweredOff || s == .unsupported }
            return false
        }
    }
}

@Suite
@BleLoop
struct MultiDelegateTests {
    final class Listener: CentralManagerDelegate, @unchecked Sendable {
        let name: String
        let log: Locked<[String]>
        var action: (() -> Void)?
        init(_ name: String, _ log: Locked<[String]>) { self.name = name; self.log = log }
        func centralManagerDidUpdateState(_ central: CentralManager) {
            log.withLock { $0.append(name) }
            action?()
        }
    }

    @Test func multiDelegateIsWeakOrderedAndWithoutDuplicates() {
        let central = CentralManager(delegate: nil, queue: nil, options: CentralManagerOptions(bus: .address("unix:path=/nonexistent/x")))
        defer { central.close() }
        let log = Locked<[String]>([])
        let multi = CentralManagerMultiDelegate()
        let a = Listener("a", log)
        var b: Listener? = Listener("b", log)
        multi.addDelegate(a)
        multi.addDelegate(b!)
        multi.addDelegate(a)
        multi.centralManagerDidUpdateState(central)
        #expect(log.value == ["a", "b"])
        b = nil
        #expect(multi.delegates.count == 1)
        multi.removeDelegate(a)
        #expect(multi.delegates.isEmpty)
    }

    @Test func listenersMayChangeTheListDuringACallback() {
        let central = CentralManager(delegate: nil, queue: nil, options: CentralManagerOptions(bus: .address("unix:path=/nonexistent/x")))
        defer { central.close() }
        let log = Locked<[String]>([])
        let multi = central.multiDelegate
        let a = Listener("a", log)
        let b = Listener("b", log)
        let c = Listener("c", log)
        // Weak `a`: the listener holding a closure that holds it would never be freed (found by
        // LeakSanitizer, with the manager's multi-delegate it kept allocated through `unowned`).
        a.action = { [unowned multi, weak a] in
            if let a { multi.removeDelegate(a) }
            multi.addDelegate(c)
        }
        multi.addDelegate(a)
        multi.addDelegate(b)
        multi.centralManagerDidUpdateState(central)
        #expect(log.value == ["a", "b"])
        multi.centralManagerDidUpdateState(central)
        #expect(log.value == ["a", "b", "b", "c"])
        _ = (b, c)
    }

    @Test func peripheralMultiDelegateFansOut() async throws {
        let bench = try await Bench.start()
        defer { bench.tearDown() }
        let peripheral = try await bench.discover()
        let second = Recorder()
        peripheral.multiDelegate.addDelegate(second)
        peripheral.multiDelegate.addDelegate(second)
        try await bench.connect(peripheral)
        peripheral.discoverServices(nil)
        try await bench.recorder.wait("services") { if case .services = $0 { return true }; return false }
        try await second.wait("services on the second listener") { if case .services = $0 { return true }; return false }
        #expect(second.count { if case .services = $0 { return true }; return false } == 1)
    }

    @Test func callbacksCanRunOnAGivenQueue() async throws {
        let bench = try await Bench.start()
        defer { bench.tearDown() }
        let queue = DispatchQueue(label: "blekit.test.callbacks")
        let log = Locked<[String]>([])
        let listener = Listener("q", log)
        let onQueue = Locked(false)
        listener.action = { onQueue.value = DispatchQueue.getSpecific(key: Self.key) == "yes" }
        queue.setSpecific(key: Self.key, value: "yes")
        let central = CentralManager(delegate: listener, queue: queue, options: CentralManagerOptions(bus: .address(bench.busAddress)))
        defer { central.close() }
        let (stream, continuation) = AsyncStream<Void>.makeStream()
        let previous = listener.action
        listener.action = { previous?(); continuation.yield() }
        var iterator = stream.makeAsyncIterator()
        _ = await iterator.next()
        #expect(onQueue.value)
        #expect(central.state == .poweredOn)
    }

    static let key = DispatchSpecificKey<String>()
}
