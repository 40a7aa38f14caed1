import BleAsync
import BleSim
import BleTestSupport
import Foundation
import Synchronization
import Testing

/// One test per FXBlueToothAsync defect (fxbluetooth-api.md section 6, items 24–31), named after it.
@Suite(.timeLimit(.minutes(TestTime.minutes(1))))
@BleLoop
struct FXBlueToothAsyncDefectTests {
    /// 24: cancelling connect or disconnect leaked the continuation; stopScan left scan hanging;
    /// a second scan leaked the first.
    @Test func defect24_cancelledConnectAndDisconnectResume_stopScanEndsScan_secondScanKeepsFirst() async throws {
        let bench = try await AsyncBench.start()
        defer { bench.tearDown() }
        let manager = bench.manager
        let discovered = try await bench.find()
        bench.simulator.faults.neverReply(to: "Connect")
        let connect = Task { await Outcome { try await manager.connect(discovered.peripheral, timeout: 20) } }
        try await bench.waitForCall("Connect")
        connect.cancel()
        #expect(await connect.value.isCancelled)

        let request = AsyncScanRequest(serviceUUIDs: [CBUUID(string: "abcd")])
        let first = Task { await Outcome { try await manager.scan(request) { _ in .connect } } }
        let second = Task { await Outcome { try await manager.scan(request) { _ in .connect } } }
        try await bench.waitForCall("StartDiscovery")
        try await eventually("both scans are registered") { await manager.pendingCallCount == 2 }
        manager.stopScan()
        for scan in [first, second] {
            guard case .failed(let error) = await scan.value, case AsyncBleClientError.scanStopped = error else {
                Issue.record("a scan did not end with scanStopped")
                continue
            }
        }
        try await eventually("nothing pending") { await manager.pendingCallCount == 0 }
    }

    /// 25: didConnect of any peripheral resolved the connect; a connect timeout did not cancel
    /// the attempt; the connect inside scan used a fixed 15 s.
    @Test func defect25_connectResolvesOnlyForItsPeripheral_timeoutCancelsTheAttempt() async throws {
        let bench = try await AsyncBench.start([Gadget.spec(), Gadget.spec(address: Gadget.other, name: "Other")])
        defer { bench.tearDown() }
        let manager = bench.manager
        let one = try await bench.find(Gadget.address)
        let other = try await bench.find(Gadget.other)
        bench.simulator.faults.failConnect(Gadget.other, with: .abortByLocal, times: nil)
        async let good = manager.connect(one.peripheral, timeout: 20)
        async let bad = Outcome { try await manager.connect(other.peripheral, timeout: 20) }
        let (device, failed) = try await (good, bad)
        #expect(device.peripheral === one.peripheral)
        guard case .failed(let error) = failed, case AsyncBleClientError.connectFailed(let peripheral, _) = error else {
            Issue.record("the failing connect ended with \(failed)")
            return
        }
        #expect(peripheral === other.peripheral)

        bench.simulator.faults.clear()
        bench.simulator.faults.neverReply(to: "Connect", times: 3)
        let disconnects = bench.callCount("Disconnect")
        // Only an attempt that reached BlueZ has something to cancel with Disconnect; a deadline
        // that ran out before the loop sent Connect (a loaded machine) rightly sends nothing.
        // So the timeout grows until an attempt was sent before it ran out, and that one is checked.
        var sent = false
        for timeout in [2.0, 6.0, 18.0].map(TestTime.scaled) where !sent {
            let connects = bench.callCount("Connect")
            do {
                _ = try await manager.connect(other.peripheral, timeout: timeout)
                Issue.record("the connect returned")
                return
            } catch AsyncBleClientError.timeout(let operation) {
                #expect(operation == .connect)
            }
            sent = bench.callCount("Connect") > connects
        }
        try #require(sent, "no Connect reached BlueZ before any of the deadlines ran out")
        try await bench.waitForCall("Disconnect", count: disconnects + 1)
        #expect(other.peripheral.state == .disconnected)
        // The connect inside scan takes the request's deadline.
        let quick = AsyncScanRequest(matcher: { $0.peripheral.address == Gadget.other }, connectTimeout: 0.3)
        await #expect(throws: AsyncBleClientError.self) { _ = try await manager.scan(quick, timeout: 20) { _ in .connect } }
    }

    /// 26: scan handlers ran concurrently in unstructured tasks, with data races.
    @Test func defect26_scanHandlersRunOneAtATimeOnTheCallersActor() async throws {
        let bench = try await AsyncBench.start([Gadget.spec(), Gadget.spec(address: Gadget.other, name: "Other")])
        defer { bench.tearDown() }
        var running = 0
        var overlaps = 0
        var calls = 0
        var seen = Set<String>()
        // The handler mutates this test's (loop-isolated) state without locks: the compiler
        // accepts it because the handler runs on the caller's actor.
        _ = try? await bench.manager.scan(AsyncScanRequest(scanOptions: ScanOptions(allowDuplicates: true)), timeout: 20) { discovered in
            running += 1
            if running > 1 { overlaps += 1 }
            calls += 1
            seen.insert(discovered.peripheral.address)
            await Task.yield()
            running -= 1
            return calls >= 20 && seen.count == 2 ? .stop : .skip
        }
        #expect(calls >= 20)
        #expect(overlaps == 0)
    }

    /// 27: one subscriber per stream; streams did not end on disconnect; a read answer was also
    /// emitted as a notification.
    @Test func defect27_everySubscriberGetsEveryValue_streamsEndOnDisconnect_readIsNotANotification() async throws {
        let bench = try await AsyncBench.start()
        defer { bench.tearDown() }
        let device = try await bench.connected()
        let notify = try await bench.characteristic(device, Gadget.notify)
        let first = try await device.subscribe(to: notify, timeout: 10)
        let second = try await device.subscribe(to: notify, timeout: 10)
        var events = bench.manager.connectionEvents().makeAsyncIterator()
        var events2 = bench.manager.connectionEvents().makeAsyncIterator()
        // A read of the notifying characteristic, then one notification, then the link drops.
        #expect(try await device.read(for: notify, timeout: 10) == Data([0x02]))
        bench.virtual?.notify(Gadget.full("ff02"), value: Data([0x99]))
        for stream in [first, second] {
            var got: [Data] = []
            do {
                for try await value in stream {
                    got.append(value)
                    if value == Data([0x99]) { bench.virtual?.dropLinks() }
                }
                Issue.record("the stream ended without an error")
            } catch AsyncBleClientError.disconnected {}
            #expect(got == [Data([0x99])])
        }
        guard case .disconnected? = await events.next(), case .disconnected? = await events2.next() else {
            Issue.record("an event stream missed the disconnect")
            return
        }
    }

    /// 28: pending operations were keyed by UUID, so equal UUIDs collided; cancellation and
    /// timeout were both reported as `.timeout`.
    @Test func defect28_equalUUIDsDoNotCollide_cancellationIsNotATimeout() async throws {
        let bench = try await AsyncBench.start()
        defer { bench.tearDown() }
        let device = try await bench.connected()
        let twins = try await device.discover(serviceUUIDs: [Gadget.twin], timeout: 10)
        #expect(twins.count == 2)
        var characteristics: [CBCharacteristic] = []
        for service in twins { characteristics += try await device.discover(characteristicUUIDs: [Gadget.twinValue], for: service, timeout: 10) }
        #expect(characteristics.count == 2)
        let (left, right) = (characteristics[0], characteristics[1])
        async let a = device.read(for: left, timeout: 10)
        async let b = device.read(for: right, timeout: 10)
        let values = try await [a, b]
        #expect(Set(values) == [Data([0xa1]), Data([0xb2])])

        bench.simulator.faults.neverReply(to: "ReadValue", times: 2)
        let reading = Task { await Outcome { try await device.read(for: characteristics[0]) } }
        try await bench.waitForCall("ReadValue", count: 3)
        reading.cancel()
        #expect(await reading.value.isCancelled)
        do {
            _ = try await device.read(for: characteristics[1], timeout: 0.2)
            Issue.record("the read returned")
        } catch AsyncBleClientError.timeout(let operation) {
            #expect(operation == .readValue)
        }
    }

    /// 29: `AsyncScanRequest.matcher` was ignored; `AsyncPeripheral` exposed no peripheral.
    @Test func defect29_matcherIsHonoured_peripheralIsExposed() async throws {
        let bench = try await AsyncBench.start([Gadget.spec(), Gadget.spec(address: Gadget.other, name: "Other")])
        defer { bench.tearDown() }
        let request = AsyncScanRequest(matcher: { $0.advertisement.localName == "Other" })
        var offered = Set<String>()
        let device = try await bench.manager.scan(request, timeout: 20) { discovered in
            offered.insert(discovered.peripheral.address)
            return .connect
        }
        #expect(offered == [Gadget.other])
        #expect(device.peripheral.address == Gadget.other)
        #expect(device.identifier == device.peripheral.identifier)
    }

    /// 30: getState could only return poweredOn and failed on the first update, even a
    /// transitional one.
    @Test func defect30_getStateWaitsOutTransitionalStates() async throws {
        let bench = try await AsyncBench.start()
        defer { bench.tearDown() }
        let manager = bench.manager
        bench.simulator.stop(.kill)
        try await eventually("the state is resetting") { manager.state == .resetting }
        let waiting = Task { try await manager.getState(timeout: 20) }
        try await eventually("getState waits") { await manager.pendingCallCount == 1 }
        try await bench.simulator.start(on: bench.fixture.bus.busAddress)
        #expect(try await waiting.value == .poweredOn)
        // The value form reports any state.
        bench.simulator.adapter("hci0")?.setPowered(false)
        try await eventually("the state is poweredOff") { manager.state == .poweredOff }
    }

    /// 31: the READMEs showed APIs of several iterations (stream scan, `connect(discovered)`,
    /// `device.peripheral`) that did not exist together. Here they all do (the README examples
    /// themselves run in BleAsyncExampleTests).
    @Test func defect31_theREADMEsAPIsExistTogether() async throws {
        let bench = try await AsyncBench.start()
        defer { bench.tearDown() }
        let discovered = try await bench.find()
        let device = try await bench.manager.connect(discovered, timeout: 20)
        try await bench.manager.disconnect(device.peripheral, timeout: 10)
        #expect(device.state == .disconnected)
    }
}
