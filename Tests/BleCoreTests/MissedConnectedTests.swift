import BleCore
import BleDBus
import BleSim
import BleTestSupport
import Foundation
import Testing

/// Seen on the real bluetoothd 5.66 in the VM of `make test-bluez`: when the ATT socket connects
/// before the daemon reads the kernel's Device Connected event, `Connected=true` is never
/// announced ("Device … is already connected" in its log), though services resolve. A central
/// waiting for Connected=true would time out on a working link.
@BleLoop
@Suite struct MissedConnectedTests {
    @Test func connectSucceedsWhenConnectedTrueIsNeverAnnounced() async throws {
        let bench = try await Bench.start()
        defer { bench.tearDown() }
        bench.simulator.faults.missConnectedAnnouncement(Sample.address)
        let peripheral = try await bench.discover()
        try await bench.connect(peripheral)
        #expect(peripheral.state == .connected)
        try await bench.resolve(peripheral)
        let characteristic = bench.characteristic(peripheral, Sample.readWrite)
        let mark = bench.recorder.mark
        peripheral.readValue(for: characteristic)
        let read = try await bench.recorder.wait(since: mark, "read") { if case .value(let c, _, _) = $0 { return c === characteristic }; return false }
        #expect(read.error == nil)

        // The link still ends cleanly: Connected=false comes, and BleKit reports it.
        let down = bench.recorder.mark
        bench.central.cancelPeripheralConnection(peripheral)
        let event = try await bench.recorder.wait(since: down, "disconnect") { if case .disconnected = $0 { return true }; return false }
        #expect(event.error == nil)
    }
}
