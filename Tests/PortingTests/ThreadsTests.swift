@testable import BleCore
import BleDBus
import BleDSL
import BleSim
import BleTestSupport
import Dispatch
import Foundation
import Synchronization
import Testing

/// A Swift 6 view model, as on iOS: `@MainActor`, with an isolated conformance (no unsafe
/// annotations), its manager on `queue: .main`.
@MainActor
final class MainActorViewModel {
    var central: CentralManager?
    let states: EventRecorder<String>

    init(states: EventRecorder<String>) { self.states = states }

    func start(bus: String) {
        central = CentralManager(delegate: self, queue: .main, options: CentralManagerOptions(bus: .address(bus)))
    }
}

extension MainActorViewModel: @MainActor CentralManagerDelegate {
    func centralManagerDidUpdateState(_ central: CentralManager) {
        // Traps unless this runs on the main actor, i.e. on the main queue.
        MainActor.assertIsolated()
        dispatchPrecondition(condition: .onQueue(.main))
        states.appendFromAnyThread("\(central.state) on the main actor")
    }
}

/// Issue 11, item 3: callbacks where iOS developers expect them, and no silent deadlock.
@Suite(.serialized, .timeLimit(.minutes(TestTime.minutes(1))))
struct ThreadsTests {
    /// The template's binary, beside the test bundle.
    static var template: String {
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return URL(fileURLWithPath: executable).deletingLastPathComponent().appendingPathComponent("BleKitAppTemplate").path
    }

    @Test @MainActor func aMainActorDelegateGetsItsCallbacksOnTheMainActor() async throws {
        let fixture = try await SimulatorFixture.start(peripherals: [])
        let bus = await BleLoop.run { fixture.bus.address }
        let model = MainActorViewModel(states: await BleLoop.run { EventRecorder<String>() })
        model.start(bus: bus)
        try await model.states.wait(count: 1)
        #expect(await BleLoop.run { model.states.events } == ["poweredOn on the main actor"])
        model.central?.close()
        await BleLoop.run { fixture.tearDown() }
    }

    @Test func theSwift6TemplateRunsAMainActorAppToItsVerdict() async throws {
        let fixture = try await SimulatorFixture.start(peripherals: [Device.spec()])
        let bus = await BleLoop.run { fixture.bus.address }
        var environment = ProcessInfo.processInfo.environment
        environment["DBUS_SYSTEM_BUS_ADDRESS"] = bus
        let child = try ChildProcess(arguments: [Self.template, "MyDevice-01", "20"], environment: environment)
        let (status, output) = await Task.detached { child.runToCompletion(timeout: 30) }.value
        await BleLoop.run { fixture.tearDown() }
        #expect(status == 0, "\(output)")
        #expect(output.contains("found MyDevice-01, RSSI -42 dBm, on the main actor"), "\(output)")
        #expect(output.contains("connected: <Peripheral: 0x"), "\(output)")
        #expect(output.contains(", isPrimary = YES, UUID = FFE0>"), "\(output)")
        #expect(output.contains("  FFE1 [writeWithoutResponse, write]\n  FFE2 [notify]\n  FFE3 [read]\n"), "\(output)")
        #expect(output.hasSuffix("disconnected\n"), "\(output)")
    }

    @Test func bleProgramRunEndsWithTheTimeoutStatusInsteadOfHanging() async throws {
        let fixture = try await SimulatorFixture.start(peripherals: [])
        let bus = await BleLoop.run { fixture.bus.address }
        var environment = ProcessInfo.processInfo.environment
        environment["DBUS_SYSTEM_BUS_ADDRESS"] = bus
        let child = try ChildProcess(arguments: [Self.template, "Nobody", "1"], environment: environment)
        let (status, output) = await Task.detached { child.runToCompletion(timeout: 20) }.value
        await BleLoop.run { fixture.tearDown() }
        #expect(status == BleProgram.timeoutStatus, "\(output)")
        #expect(output.contains("scanning for Nobody"), "\(output)")
    }

    @Test func aBlockedCallbackQueueIsReportedNotASilentDeadlock() async throws {
        let fixture = try await SimulatorFixture.start(peripherals: [])
        let bus = await BleLoop.run { fixture.bus.address }
        let label = "porting.blocked.\(UUID().uuidString)"
        let queue = DispatchQueue(label: label)
        let reported = DispatchSemaphore(value: 0)
        let saved = CallbackStallMonitor.threshold.withLock { $0 }
        CallbackStallMonitor.threshold.withLock { $0 = .milliseconds(300) }
        CallbackStallMonitor.observer.withLock { $0 = { text in if text.contains(label) { reported.signal() } } }
        defer {
            CallbackStallMonitor.threshold.withLock { $0 = saved }
            CallbackStallMonitor.observer.withLock { $0 = nil }
        }
        // The queue's own thread waits for something only a callback on that queue could give:
        // the classic `queue: .main` plus a semaphore on the main thread.
        let verdict = DispatchSemaphore(value: 0)
        let outcome = Mutex<String>("")
        queue.async {
            let detected = reported.wait(timeout: .now() + 10) == .success
            outcome.withLock { $0 = detected ? "reported" : "silent" }
            verdict.signal()
        }
        let states = StateLog(recorder: await BleLoop.run { EventRecorder<ManagerState>() })
        let central = CentralManager(delegate: states, queue: queue, options: CentralManagerOptions(bus: .address(bus)))
        await Task.detached { _ = verdict.wait(timeout: .now() + 15) }.value
        #expect(outcome.withLock { $0 } == "reported")
        // Once the queue is free, the callbacks that waited run.
        try await states.recorder.wait("poweredOn") { $0.contains(.poweredOn) }
        central.close()
        await BleLoop.run { fixture.tearDown() }
    }
}

extension BleLoop {
    /// Runs `body` on the loop and returns its value.
    static func run<T: Sendable>(_ body: @escaping @BleLoop @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            BleLoop.perform { continuation.resume(returning: body()) }
        }
    }
}
