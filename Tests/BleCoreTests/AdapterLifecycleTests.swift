import BleAsync
@testable import BleCore
import BleDBus
import BleSim
import BleTestSupport
import Foundation
import Testing

/// Issue 27: both roles share one adapter lifecycle (`AdapterWatch`), so they agree on every
/// state, and both power the adapter on when asked.
@Suite(.timeLimit(.minutes(TestTime.minutes(1))))
@BleLoop
struct AdapterLifecycleTests {
    enum Role: String, CaseIterable, CustomStringConvertible {
        case central, peripheral
        var description: String { rawValue }
    }

    /// Records a manager's states as its delegate hears them (on the loop: `queue: nil`).
    @BleLoop
    final class StateRecorder: @preconcurrency CentralManagerDelegate, @preconcurrency PeripheralManagerDelegate {
        let states = EventRecorder<ManagerState>()
        func centralManagerDidUpdateState(_ central: CentralManager) { states.append(central.state) }
        func peripheralManagerDidUpdateState(_ peripheral: PeripheralManager) { states.append(peripheral.state) }
    }

    /// A manager of `role` on the fixture's bus: its state, its error, and how to close it.
    struct Subject {
        let state: () -> ManagerState
        let stateError: () -> BleError?
        let close: () -> Void
    }

    static func make(_ role: Role, on fixture: SimulatorFixture, recorder: StateRecorder, powerOn: Bool = false,
                     returnTimeout: Duration = .seconds(15)) -> Subject {
        guard case .address(let bus) = fixture.bus.busAddress else { preconditionFailure("a private bus has an address") }
        switch role {
        case .central:
            let central = CentralManager(delegate: recorder, queue: nil, options: CentralManagerOptions(
                bus: .address(bus), adapter: "hci0", powerOnAdapter: powerOn, bluetoothdReturnTimeout: returnTimeout))
            return Subject(state: { central.state }, stateError: { central.stateError }, close: { central.close() })
        case .peripheral:
            let manager = PeripheralManager(delegate: recorder, queue: nil, options: PeripheralManagerOptions(
                bus: .address(bus), adapter: "hci0", powerOnAdapter: powerOn, bluetoothdReturnTimeout: returnTimeout))
            return Subject(state: { manager.state }, stateError: { manager.stateError }, close: { manager.close() })
        }
    }

    /// One sequence of adapter and daemon events, seen the same way by both roles: the
    /// peripheral role used to have its own copy of this lifecycle (no PowerState, no power-on,
    /// its own absence timer) that had drifted from the central's.
    @Test(arguments: Role.allCases)
    func bothRolesFollowPowerAndTheDaemonAlike(_ role: Role) async throws {
        let fixture = try await SimulatorFixture.start(configuration: .init(adapters: [.init(index: 0, powered: false)]))
        defer { fixture.tearDown() }
        let recorder = StateRecorder()
        let subject = Self.make(role, on: fixture, recorder: recorder, returnTimeout: .milliseconds(200))
        defer { subject.close() }
        let deadline = TestTime.scaled(Duration.seconds(10))

        try await recorder.states.wait("poweredOff", timeout: deadline) { $0.last == .poweredOff }
        #expect(subject.stateError() == nil)
        fixture.simulator.adapter("hci0")?.setPowered(true)
        try await recorder.states.wait("poweredOn", timeout: deadline) { $0.last == .poweredOn }

        // bluetoothd stops (the adapter goes off and away first, as on SIGTERM) and stays away
        // past the return deadline: unsupported, saying bluetoothd is not there.
        fixture.simulator.stop(.clean)
        try await recorder.states.wait("unsupported after resetting", timeout: deadline) { states in
            guard let resetting = states.lastIndex(of: .resetting) else { return false }
            return states[resetting...].contains(.unsupported)
        }
        guard case .serviceUnknown? = subject.stateError() else {
            Issue.record("\(role): stateError \(String(describing: subject.stateError())) after bluetoothd stayed away")
            return
        }
        // It comes back with the adapter off again (BleSim's configuration).
        try await fixture.simulator.restart(on: fixture.bus.busAddress)
        try await recorder.states.wait("poweredOff again", timeout: deadline) { $0.filter { $0 == .poweredOff }.count >= 3 }
        #expect(recorder.states.events == [.poweredOff, .poweredOn, .poweredOff, .unsupported, .resetting, .unsupported, .poweredOff],
                "\(role) heard \(recorder.states.events)")
    }

    @Test(arguments: Role.allCases)
    func anUnpoweredAdapterIsPoweredOnWhenAsked(_ role: Role) async throws {
        let fixture = try await SimulatorFixture.start(configuration: .init(adapters: [.init(index: 0, powered: false)]))
        defer { fixture.tearDown() }
        let recorder = StateRecorder()
        let subject = Self.make(role, on: fixture, recorder: recorder, powerOn: true)
        defer { subject.close() }
        try await recorder.states.wait("poweredOn", timeout: TestTime.scaled(Duration.seconds(10))) { $0.last == .poweredOn }
        #expect(fixture.simulator.adapter("hci0")?.powered == true)
        #expect(recorder.states.events == [.poweredOn], "no poweredOff while BleKit powers the adapter on")
    }

    /// BleAsync's two managers give one verdict: `getState` fails at poweredOff and returns
    /// once the adapter is powered on (here by the manager itself, as asked).
    @Test func bleAsyncManagersOfBothRolesReportPoweredOffAndPowerOnWhenAsked() async throws {
        let fixture = try await SimulatorFixture.start(configuration: .init(adapters: [.init(index: 0, powered: false)]))
        defer { fixture.tearDown() }
        guard case .address(let bus) = fixture.bus.busAddress else { return }
        let server = AsyncPeripheralManager(options: PeripheralManagerOptions(bus: .address(bus), adapter: "hci0"))
        defer { server.manager.close() }
        let central = AsyncBleManager(configuration: CentralManagerOptions(bus: .address(bus), adapter: "hci0"))
        defer { central.close() }
        for getState in [{ try await server.getState(timeout: 10) }, { try await central.getState(timeout: 10) }] {
            do {
                let state = try await getState()
                Issue.record("getState returned \(state) on a powered-off adapter")
            } catch AsyncBleClientError.bluetoothUnavailable(let state) {
                #expect(state == .poweredOff)
            }
        }
        let powering = AsyncPeripheralManager(options: PeripheralManagerOptions(bus: .address(bus), adapter: "hci0", powerOnAdapter: true))
        defer { powering.manager.close() }
        #expect(try await powering.getState(timeout: TestTime.scaled(10)) == .poweredOn)
        #expect(fixture.simulator.adapter("hci0")?.powered == true)
    }
}
