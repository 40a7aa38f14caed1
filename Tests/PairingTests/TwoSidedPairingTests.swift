@testable import BleCore
import BleDBus
@testable import BleSim
import BleTestSupport
import Foundation
import Testing

/// Issue 12 item 6: a central and a serving app, each with its own bus connection and agent,
/// pair with numeric comparison; both agents are asked and both must accept.
@BleLoop
struct TwoSidedPairingTests {
    static let appAddress = "00:AA:01:00:00:00"
    static let centralAdapterAddress = "00:AA:01:00:00:01"

    @Test func passkeyConfirmationIsAnsweredByBothSidesAgents() async throws {
        let bench = try await PairingBench.start()
        defer { bench.tearDown() }
        let app = try await ServingApp.start(on: bench.fixture.bus.busAddress)
        defer { app.connection.close() }
        _ = try await bench.ownAgent("serving", .displayYesNo) { $0.accept() }
        _ = try await bench.centralAgent(.displayYesNo) { $0.accept() }
        let peripheral = try await bench.discover(Self.appAddress)
        #expect(!peripheral.isPaired)

        let mark = bench.recorder.mark
        let error = try await bench.pair(peripheral)
        #expect(error == nil)
        let central = bench.recorder.requests("central", since: mark)
        let serving = bench.recorder.requests("serving", since: mark)
        #expect(central.count == 1 && serving.count == 1)
        guard case .confirmation(let passkey)? = central.first?.kind, case .confirmation(let other)? = serving.first?.kind else {
            Issue.record("both agents should get RequestConfirmation: \(bench.recorder.events)")
            return
        }
        #expect(passkey == other, "both sides compare the same number")
        #expect(passkey <= 999_999)
        #expect(central.first?.devicePath == "/org/bluez/hci1/dev_00_AA_01_00_00_00")
        #expect(serving.first?.devicePath == "/org/bluez/hci0/dev_00_AA_01_00_00_01", "the responder is asked about the central")
        #expect(central.first?.peripheral === peripheral)
        #expect(central.first?.answer == .accepted)
        #expect(peripheral.isPaired && peripheral.isBonded)
        // The serving side's device object for the central is bonded too.
        try await bench.fixture.waitForProperty("/org/bluez/hci0/dev_00_AA_01_00_00_01", "Paired", .boolean(true))
        #expect(bench.central.bondedPeripherals().map(\.address) == [Self.appAddress])
    }

    @Test func theRespondersRefusalFailsThePairingAndTheInitiatorsRequestIsCanceled() async throws {
        let bench = try await PairingBench.start()
        defer { bench.tearDown() }
        let app = try await ServingApp.start(on: bench.fixture.bus.busAddress)
        defer { app.connection.close() }
        _ = try await bench.ownAgent("serving", .displayYesNo) { $0.reject() }
        // The central's user has not decided yet when the peer refuses.
        _ = try await bench.centralAgent(.displayYesNo, answering: nil)
        let peripheral = try await bench.discover(Self.appAddress)
        let mark = bench.recorder.mark
        let error = try await bench.pair(peripheral)
        #expect(error == .authenticationFailed)
        #expect(bench.recorder.requests("serving", since: mark).first?.answer == .rejected)
        try await bench.recorder.wait(since: mark, "the central's request cancelled by bluetoothd") {
            if case .canceled("central", _) = $0 { return true }
            return false
        }
        #expect(bench.recorder.requests("central", since: mark).first?.answer == .canceled)
        #expect(!peripheral.isPaired)
    }

    @Test func justWorksAsksOnlyTheRespondersAgentForAuthorization() async throws {
        let bench = try await PairingBench.start()
        defer { bench.tearDown() }
        let app = try await ServingApp.start(on: bench.fixture.bus.busAddress)
        defer { app.connection.close() }
        _ = try await bench.ownAgent("serving", .noInputNoOutput) { $0.accept() }
        _ = try await bench.centralAgent(.noInputNoOutput) { $0.accept() }
        let peripheral = try await bench.discover(Self.appAddress)
        let mark = bench.recorder.mark
        #expect(try await bench.pair(peripheral) == nil)
        #expect(bench.recorder.requests("central", since: mark).isEmpty, "observed: the initiator makes no agent call")
        #expect(bench.recorder.requests("serving", since: mark).map(\.kind) == [.authorization])
    }

    @Test func aPeerThatKeptItsBondRefusesTheNextPairingUntilBothForget() async throws {
        let bench = try await PairingBench.start()
        defer { bench.tearDown() }
        let app = try await ServingApp.start(on: bench.fixture.bus.busAddress)
        defer { app.connection.close() }
        _ = try await bench.ownAgent("serving", .noInputNoOutput) { $0.accept() }
        _ = try await bench.centralAgent(.noInputNoOutput) { $0.accept() }
        var peripheral = try await bench.discover(Self.appAddress)
        #expect(try await bench.pair(peripheral) == nil)
        try await removeBond(bench, peripheral)
        #expect(bench.central.bondedPeripherals().isEmpty)
        peripheral = try await bench.discover(Self.appAddress)
        #expect(try await bench.pair(peripheral) == .authenticationFailed, "observed B2: the peer still holds its bond")
    }
}

@BleLoop
func removeBond(_ bench: PairingBench, _ peripheral: Peripheral) async throws {
    let done = EventRecorder<BleError?>()
    bench.central.removeBond(peripheral) { error in BleLoop.assumeIsolated { done.append(error) } }
    try await done.wait(count: 1, timeout: .seconds(10))
    #expect(done.events.first == .some(nil))
}
