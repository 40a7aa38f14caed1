import BleCore
import BleDBus
import BleSim
import BleTestSupport
import Foundation
import Testing

/// Seen on the real bluetoothd 5.66 in the VM of `make test-bluez` (`central.scanFilters`): after
/// `RemoveDevice`, the next report re-creates the device object, and its InterfacesAdded already
/// carries Name, UUIDs and RSSI. BleKit kept the peripheral of the address and only re-attached
/// it, so that report was never a discovery; with btvirt's one report per scan start
/// (`reportOnlyAtScanStart`) nothing else followed and the scan stayed silent.
@BleLoop
@Suite(.timeLimit(.minutes(TestTime.minutes(1)))) struct ReportOnlyAtScanStartTests {
    /// `removeBond`'s answer (the suite's time limit bounds the wait).
    static func remove(_ peripheral: Peripheral, on central: CentralManager) async -> BleError? {
        await withCheckedContinuation { continuation in central.removeBond(peripheral) { continuation.resume(returning: $0) } }
    }

    @Test func aRemovedDeviceHeardAgainIsDiscoveredFromItsFirstReport() async throws {
        let bench = try await Bench.start()
        defer { bench.tearDown() }
        bench.simulator.faults.reportOnlyAtScanStart()
        let peripheral = try await bench.discover()

        #expect(await Self.remove(peripheral, on: bench.central) == nil)

        for filter in [nil, [Sample.service]] as [[BluetoothUUID]?] {
            let mark = bench.recorder.mark
            bench.central.scanForPeripherals(withServices: filter)
            _ = try await bench.await("discovery after RemoveDevice (filter \(String(describing: filter)))", since: mark) {
                if case .discovered(let other, _, _) = $0 { return other.address == Sample.address }
                return false
            }
            bench.central.stopScan()
            #expect(await Self.remove(peripheral, on: bench.central) == nil)
        }
    }
}
