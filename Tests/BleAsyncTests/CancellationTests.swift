import BleAsync
@testable import BleCore
import BleSim
import BleTestSupport
import Foundation
import Testing

/// Each kind of call, cancelled while BlueZ is working on it: the caller gets
/// `CancellationError` (never a timeout), nothing stays registered, and BlueZ's side is undone
/// where it can be.
@Suite(.timeLimit(.minutes(TestTime.minutes(2))))
@BleLoop
struct CancellationTests {
    /// Runs `body` in a task, cancels it once `inFlight` holds, and returns how it ended.
    func cancelMidFlight<T: Sendable>(_ bench: AsyncBench, after member: String?,
                                      _ body: @escaping @Sendable () async throws -> T) async throws -> Outcome<T> {
        let task = Task { await Outcome { try await body() } }
        if let member { try await bench.waitForCall(member) } else { await Task.yield() }
        let cancelled = ContinuousClock.now
        task.cancel()
        let outcome = await task.value
        // Reported, not asserted (speed is never asserted in tests).
        print("cancelled after \(member ?? "start"): returned \(ContinuousClock.now - cancelled) after cancel()")
        if case .failed(let error) = outcome { Issue.record("ended with \(error), not CancellationError") }
        return outcome
    }

    func expectNothingPending(_ bench: AsyncBench) async throws {
        let manager = bench.manager
        try await eventually("no call is pending") { await manager.pendingCallCount == 0 }
    }

    @Test func cancellingAConnectDisconnectsInBlueZ() async throws {
        let bench = try await AsyncBench.start()
        defer { bench.tearDown() }
        let discovered = try await bench.find()
        bench.simulator.faults.neverReply(to: "Connect")
        let manager = bench.manager
        let outcome = try await cancelMidFlight(bench, after: "Connect") { try await manager.connect(discovered.peripheral, timeout: 20) }
        #expect(outcome.isCancelled)
        try await bench.waitForCall("Disconnect")
        try await expectNothingPending(bench)
        try await eventually("no link") { bench.virtual?.connectedCentrals == 0 }
    }

    @Test func cancellingAReadWriteOrDiscovery() async throws {
        // BlueZ cannot recall a sent ReadValue: the cancelled read stays first in BleKit's queue
        // for its characteristic until its operation deadline, and the last read waits behind it.
        // The cancel must come before the 5 s deadline runs out (a loaded test process sees the call
        // in BleSim late): at the tests' clock.
        let bench = try await AsyncBench.start(configure: { $0.operationTimeout = TestTime.scaled(.seconds(5)) })
        defer { bench.tearDown() }
        let device = try await bench.connected()
        let readWrite = try await bench.characteristic(device, Gadget.readWrite)
        bench.simulator.faults.neverReply(to: "ReadValue")
        #expect(try await cancelMidFlight(bench, after: "ReadValue") { try await device.read(for: readWrite) }.isCancelled)
        bench.simulator.faults.neverReply(to: "WriteValue")
        #expect(try await cancelMidFlight(bench, after: "WriteValue") { try await device.write(Data([1]), to: readWrite) }.isCancelled)
        // A service BlueZ has not exported is waited for (servicesResolvedGrace): cancelled meanwhile.
        let missing = try await cancelMidFlight(bench, after: nil) { try await device.discover(serviceUUIDs: [CBUUID(string: "beef")]) }
        #expect(missing.isCancelled)
        try await expectNothingPending(bench)
        // The link is still good afterwards.
        #expect(try await device.read(for: readWrite, timeout: TestTime.scaled(20)) == Data([0x01]))
    }

    @Test func cancellingASubscribeOrANotificationStreamUnsubscribes() async throws {
        let bench = try await AsyncBench.start()
        defer { bench.tearDown() }
        let device = try await bench.connected()
        let notify = try await bench.characteristic(device, Gadget.notify)
        bench.simulator.faults.neverReply(to: "AcquireNotify")
        let subscribing = try await cancelMidFlight(bench, after: "AcquireNotify") { _ = try await device.subscribe(to: notify) }
        #expect(subscribing.isCancelled)
        try await expectNothingPending(bench)

        let bench2 = try await AsyncBench.start()
        defer { bench2.tearDown() }
        let device2 = try await bench2.connected()
        let notify2 = try await bench2.characteristic(device2, Gadget.notify)
        let stream = try await device2.subscribe(to: notify2, timeout: 10)
        #expect(notify2.isNotifying)
        let reader = Task { for try await _ in stream {} }
        reader.cancel()
        _ = await reader.result
        try await eventually("notifications are off") { !notify2.isNotifying }
        try await expectNothingPending(bench2)
    }

    /// Issue 25 item 2: a stream cancelled before the loop registered it stayed registered
    /// (185 of 200 in the report): notifications on, the AcquireNotify socket open,
    /// `pendingCallCount` above 0 until the link dropped. Here 200 subscriptions, half
    /// `subscribe(to:)` and half `notifications(for:)`, are cancelled at random points: before
    /// the loop registers them, while notifications are being enabled, or once they are on.
    /// bluetoothd answers AcquireNotify (and StartNotify) "Notify acquired" while it has not yet
    /// handled the hang-up of the socket an unsubscribe closed a moment before (seen as
    /// "subscription 60 ended with … (Notify acquired)" in a full run of the test below): BleKit
    /// asks again instead of failing the new subscription.
    @Test func aNotifyAcquiredRefusalRightAfterAnUnsubscribeIsAskedAgain() async throws {
        let bench = try await AsyncBench.start()
        defer { bench.tearDown() }
        let device = try await bench.connected()
        let notify = try await bench.characteristic(device, Gadget.notify)
        bench.simulator.faults.failCall("AcquireNotify", name: "org.bluez.Error.NotPermitted", message: "Notify acquired", times: 1)
        bench.simulator.faults.failCall("StartNotify", name: "org.bluez.Error.NotPermitted", message: "Notify acquired", times: 1)
        let stream = try await device.subscribe(to: notify, timeout: 20)
        bench.virtual?.notify(Gadget.full("ff02"), value: Data([0x5a]))
        for try await value in stream {
            #expect(value == Data([0x5a]))
            break
        }
    }

    @Test func cancelledSubscriptionsLeaveNothingBehind() async throws {
        let bench = try await AsyncBench.start()
        defer { bench.tearDown() }
        let device = try await bench.connected()
        let notify = try await bench.characteristic(device, Gadget.notify)
        let manager = bench.manager
        var generator = SystemRandomNumberGenerator()
        var points = [0, 0, 0, 0]
        for index in 0..<200 {
            let subscribes = index % 2 == 0
            let ended = Locked(false)
            let task = Task {
                defer { ended.value = true }
                let stream = subscribes ? try await device.subscribe(to: notify, timeout: 20) : device.notifications(for: notify)
                for try await _ in stream {}
            }
            let point = Int.random(in: 0..<4, using: &generator)
            points[point] += 1
            switch point {
            case 0: break
            case 1: for _ in 0..<Int.random(in: 1...4, using: &generator) { await Task.yield() }
            // Deadlines, not pauses, with room for a loaded test process; a subscription that ended
            // by itself instead (an error) is reported below with its error.
            case 2: try await eventually("subscription \(index) is registered", timeout: .seconds(30)) { await manager.pendingCallCount > 0 || ended.value }
            default: try await eventually("subscription \(index) is on", timeout: .seconds(30)) { notify.isNotifyingOnLoop || ended.value }
            }
            task.cancel()
            if case .failure(let error) = await task.result, !(error is CancellationError) {
                Issue.record("subscription \(index) ended with \(error), not CancellationError")
            }
        }
        print("200 cancelled subscriptions: \(points[0]) at once, \(points[1]) after a few yields, "
              + "\(points[2]) once registered, \(points[3]) once notifying; \(await manager.pendingCallCount) call(s) pending right after")
        try await expectNothingPending(bench)
        let path = notify.path
        try await eventually("notifications are off in BleKit and in BleSim, the socket closed", timeout: .seconds(20)) {
            guard !notify.isNotifyingOnLoop, notify.subscription == nil, bench.virtual?.subscribers(of: Gadget.full("ff02")) == 0 else { return false }
            let notifying = try? await bench.fixture.property(path, BlueZ.GattCharacteristic1.interface, BlueZ.GattCharacteristic1.notifying.name)
            let acquired = try? await bench.fixture.property(path, BlueZ.GattCharacteristic1.interface, BlueZ.GattCharacteristic1.notifyAcquired.name)
            return notifying == .boolean(false) && acquired == .boolean(false)
        }
        // The link still works: a new subscription hears a value.
        let stream = try await device.subscribe(to: notify, timeout: 20)
        bench.virtual?.notify(Gadget.full("ff02"), value: Data([0x5a]))
        for try await value in stream {
            #expect(value == Data([0x5a]))
            break
        }
    }

    @Test func cancellingAScanStopsTheRadioScan() async throws {
        let bench = try await AsyncBench.start()
        defer { bench.tearDown() }
        let manager = bench.manager
        let outcome = try await cancelMidFlight(bench, after: "StartDiscovery") {
            try await manager.scan(AsyncScanRequest(serviceUUIDs: [CBUUID(string: "abcd")])) { _ in .connect }
        }
        #expect(outcome.isCancelled)
        try await bench.waitForCall("StopDiscovery")
        try await expectNothingPending(bench)
    }

    @Test func cancellingADisconnectAndAGetState() async throws {
        let bench = try await AsyncBench.start()
        defer { bench.tearDown() }
        let device = try await bench.connected()
        bench.simulator.faults.neverReply(to: "Disconnect")
        let manager = bench.manager
        #expect(try await cancelMidFlight(bench, after: "Disconnect") { try await manager.disconnect(device) }.isCancelled)
        // bluetoothd gone: the state is transitional (resetting), which getState waits out.
        bench.simulator.stop(.kill)
        try await eventually("the state is resetting") { manager.state == .resetting }
        #expect(try await cancelMidFlight(bench, after: nil) { try await manager.getState() }.isCancelled)
        try await expectNothingPending(bench)
    }

    @Test func cancellingACommandAndAPacedWrite() async throws {
        let bench = try await AsyncBench.start()
        defer { bench.tearDown() }
        let device = try await bench.connected()
        let write = try await bench.characteristic(device, Gadget.readWrite)
        let read = try await bench.characteristic(device, Gadget.notify)
        let command = try await cancelMidFlight(bench, after: "WriteValue") {
            try await device.execute(EchoCommand(cmdData: Data([1])), write: write, read: read)
        }
        #expect(command.isCancelled)
        // AcquireWrite never answers: the backlog stays, the write waits for room; cancelled.
        let paced = try await bench.characteristic(device, Gadget.writeNoResponse)
        bench.simulator.faults.neverReply(to: "AcquireWrite")
        let payload = Data(count: 100)
        #expect(try await cancelMidFlight(bench, after: "AcquireWrite") {
            try await device.write(payload, to: paced, type: .withoutResponse)
        }.isCancelled)
        try await expectNothingPending(bench)
    }

    @Test func aThousandCancelledConnectsLeaveNothingBehind() async throws {
        let bench = try await AsyncBench.start()
        defer { bench.tearDown() }
        let discovered = try await bench.find()
        let manager = bench.manager
        var cancelled = 0
        var connectedFirst = 0
        for index in 0..<1000 {
            let connects = bench.callCount("Connect")
            let task = Task { await Outcome { try await manager.connect(discovered.peripheral, timeout: 20) } }
            switch index % 3 {
            case 0: break
            case 1: await Task.yield()
            default: try await bench.waitForCall("Connect", count: connects + 1)
            }
            task.cancel()
            switch await task.value {
            case .cancelled:
                cancelled += 1
            case .value(let device):
                // The link was up before the cancel: the caller owns it.
                connectedFirst += 1
                try await manager.disconnect(device, timeout: 10)
            case .failed(let error):
                // A connect cancelled while the previous one's Disconnect is still out.
                guard case AsyncBleClientError.connectFailed = error else {
                    Issue.record("connect \(index) ended with \(error)")
                    continue
                }
            }
        }
        print("1000 cancelled connects: \(cancelled) ended with CancellationError, \(connectedFirst) connected before the cancel")
        #expect(cancelled > 0)
        #expect(cancelled + connectedFirst <= 1000)
        try await expectNothingPending(bench)
        // A deadline, not a pause: a thousand Disconnects queue behind the other tests of a loaded process.
        try await eventually("no link in BleSim and in BleKit's view of BlueZ", timeout: .seconds(60)) {
            bench.virtual?.connectedCentrals == 0 && bench.manager.central.retrieveConnectedPeripherals(withServices: []).isEmpty
        }
    }
}
