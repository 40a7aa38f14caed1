import BleCore
import BleSim
import BleTestSupport
import ExampleSupport
import Foundation

/// With `--sim`: BleSim's adapter and daemon go through every state while one manager follows,
/// and each state must be reported with its advice; then a refused user.
@MainActor
struct SimulatedStateTour {
    let advisor: StateAdvisor
    let simulator: Simulator
    let bus: PrivateBus
    let options: CentralManagerOptions

    static let steps = ["powered on", "powered off", "powered on again", "no adapter", "adapter back",
                        "bluetoothd gone", "bluetoothd back", "unauthorized"]

    func run() async -> Int32 {
        let log = StepLog("StateAndPermissions", steps: Self.steps)
        var tourOptions = options
        tourOptions.bluetoothdReturnTimeout = .milliseconds(500)
        let manager = CBCentralManager(delegate: advisor, queue: .main, options: tourOptions)
        func expect(_ step: String, _ state: ManagerState, _ change: () async -> Void) async -> Bool {
            let waiting = advisor.next(state, current: manager.state)
            await change()
            let arrived = await waiting.wait(seconds: 10)
            log.step(step, passed: arrived && manager.state == state,
                     arrived ? "\(state) — told: \(StateAdvisor.advice(state, error: manager.stateError))" : "still \(manager.state) after 10 s")
            return arrived
        }
        let adapters = await simulator.configuration.adapters
        guard await expect("powered on", .poweredOn, {}) else { return finish(log, manager) }
        _ = await expect("powered off", .poweredOff) { await simulator.adapter("hci0")?.setPowered(false) }
        _ = await expect("powered on again", .poweredOn) { await simulator.adapter("hci0")?.setPowered(true) }
        _ = await expect("no adapter", .unsupported) {
            for spec in adapters { await simulator.removeAdapter(spec.name) }
        }
        _ = await expect("adapter back", .poweredOn) {
            for spec in adapters { _ = await simulator.addAdapter(spec) }
        }
        _ = await expect("bluetoothd gone", .unsupported) { await simulator.stop(.kill) }
        _ = await expect("bluetoothd back", .poweredOn) { try? await simulator.restart(.clean, on: bus.busAddress) }
        manager.close()
        // A user the policy refuses: a new manager, as an app started by that user would be.
        await simulator.faults.denyAccessToEveryone()
        let refused = StateAdvisor()
        let denied = CBCentralManager(delegate: refused, queue: .main, options: options)
        let arrived = await refused.next(.unauthorized, current: denied.state).wait(seconds: 10)
        log.step("unauthorized", passed: arrived, arrived ? "unauthorized — told: \(StateAdvisor.advice(.unauthorized, error: denied.stateError))" : "still \(denied.state)")
        denied.close()
        await simulator.faults.clear()
        return log.finish()
    }

    private func finish(_ log: StepLog, _ manager: CBCentralManager) -> Int32 {
        manager.close()
        return log.finish()
    }
}
