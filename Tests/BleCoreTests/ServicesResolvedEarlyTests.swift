import BleCore
import BleDBus
import BleSim
import BleTestSupport
import Foundation
import Testing

/// Pain point #8 (bluez #1489, bleak PR #923): `ServicesResolved=true` can come before the GATT
/// objects are exported. `connect` must not report the peripheral ready with an empty tree.
@BleLoop
@Suite struct ServicesResolvedEarlyTests {
    @Test func connectWaitsForObjectsThatArriveAfterServicesResolved() async throws {  // pain point #8
        let bench = try await Bench.start()
        defer { bench.tearDown() }
        // Objects 100 ms after ServicesResolved; the harness's grace is 200 ms.
        bench.simulator.faults.announceServicesResolvedEarly(Sample.address, objectsAfterMilliseconds: 100)
        let peripheral = try await bench.discover()
        try await bench.connect(peripheral)
        let mark = bench.recorder.mark
        peripheral.discoverServices([Sample.service])
        let event = try await bench.recorder.wait(since: mark, "services") { if case .services = $0 { return true }; return false }
        guard case .services(_, let error) = event else {
            Issue.record("no services event")
            return
        }
        #expect(error == nil)
        #expect(peripheral.services?.contains { $0.uuid == Sample.service } == true)
    }

    @Test func objectsLaterThanTheGraceStillEndInAClearError() async throws {  // pain point #8
        let bench = try await Bench.start()
        defer { bench.tearDown() }
        // Far beyond the grace: connect reports ready on ServicesResolved, and asking for the
        // service then ends with "service not found" instead of hanging or crashing.
        bench.simulator.faults.announceServicesResolvedEarly(Sample.address, objectsAfterMilliseconds: 5_000)
        let peripheral = try await bench.discover()
        try await bench.connect(peripheral)
        let mark = bench.recorder.mark
        peripheral.discoverServices([Sample.service])
        let event = try await bench.recorder.wait(since: mark, "services") { if case .services = $0 { return true }; return false }
        guard case .services(_, let error) = event else {
            Issue.record("no services event")
            return
        }
        #expect(error == .serviceNotFound(Sample.service))
        #expect(peripheral.services?.contains { $0.uuid == Sample.service } != true)
    }
}
