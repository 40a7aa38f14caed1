import BleAsync
@testable import BleCore
import BleDBus
import BleSim
import BleTestSupport
import Foundation

/// Answers the pairing agent's questions: at once, unless told to hold them (the pairing is
/// then in flight when the fault strikes).
final class PairingHolder: PairingAgentDelegate, Sendable {
    let hold = Locked(false)
    let requests: EventRecorder<PairingRequest>

    @BleLoop init() { requests = EventRecorder<PairingRequest>() }

    func pairingAgent(_ agent: PairingAgent, didReceive request: PairingRequest) {
        requests.appendFromAnyThread(request)
        if !hold.value { request.accept() }
    }
}

extension Bench {
    /// A bench whose central is an `AsyncBleManager`'s (the recorder hears its events too).
    static func startAsync(_ peripherals: [PeripheralSpec], configuration: Simulator.Configuration,
                           configure: (inout CentralManagerOptions) -> Void) async throws -> (Bench, AsyncBleManager) {
        let fixture = try await SimulatorFixture.start(peripherals: peripherals, configuration: configuration)
        let bench = Bench(fixture: fixture)
        let calls = bench.calls
        fixture.simulator.traceObserver = { calls.append($0.member) }
        var options = CentralManagerOptions(bus: .address(bench.busAddress), operationTimeout: .seconds(3), connectTimeout: .seconds(10),
                                            retryBackoff: .milliseconds(10), servicesResolvedGrace: .milliseconds(200))
        configure(&options)
        let manager = AsyncBleManager(configuration: options)
        manager.central.multiDelegate.addDelegate(bench.recorder)
        bench.central = manager.central
        try await bench.recorder.wait("poweredOn") { if case .state(.poweredOn) = $0 { return true }; return false }
        return (bench, manager)
    }
}

extension Bench {
    /// Scans until the device at `address` is reported by this scan (not an earlier one), then
    /// stops scanning and makes the recorder its delegate.
    func freshDiscovery(of address: String, _ what: String) async throws -> Peripheral {
        let mark = recorder.mark
        central.scanForPeripherals(withServices: nil)
        let event = try await recorder.wait(since: mark, what) {
            if case .discovered(let p, _, _) = $0 { return p.address == address }
            return false
        }
        central.stopScan()
        guard case .discovered(let found, _, _) = event else { throw WaitTimeout(what: "discovery", seen: []) }
        found.delegate = recorder
        return found
    }

    /// Cancels the link of `peripheral` (if any) and waits until it is down.
    func disconnect(_ peripheral: Peripheral) async throws {
        guard peripheral.state != .disconnected else { return }
        let mark = recorder.mark
        central.cancelPeripheralConnection(peripheral)
        try await recorder.wait(since: mark, "the disconnect") {
            if case .disconnected(let p, _) = $0 { return p === peripheral }
            if case .failedToConnect(let p, _) = $0 { return p === peripheral }
            return false
        }
    }
}
