@testable import BleCore
import BleDBus
@testable import BleSim
import BleTestSupport
import Foundation
import Testing

/// The agent against virtual peripherals: methods, refusals, deadlines, cancel, bonds.
@BleLoop
struct PairingAgentTests {
    static let address = "C0:FF:EE:00:00:01"
    static func spec(_ address: String = PairingAgentTests.address, addressType: PeripheralSpec.AddressType = .public) -> PeripheralSpec {
        PeripheralSpec(address: address, addressType: addressType, name: "Lock", serviceUUIDs: ["ff00"], services: [
            ServiceSpec(uuid: "ff00", characteristics: [CharacteristicSpec(uuid: "ff01", flags: ["read"], value: Data([1]))]),
        ])
    }

    static func bench(_ pairing: PeerPairing?, address: String = PairingAgentTests.address,
                      addressType: PeripheralSpec.AddressType = .public) async throws -> PairingBench {
        let bench = try await PairingBench.start([spec(address, addressType: addressType)])
        bench.simulator.setPairing(pairing, for: address)
        return bench
    }

    @Test func withoutADelegateEveryRequestIsRefused() async throws {
        let bench = try await Self.bench(PeerPairing(capability: "DisplayYesNo"))
        defer { bench.tearDown() }
        let agent = try await bench.centralAgent(.displayYesNo, delegate: false)
        #expect(agent.isRegistered)
        let peripheral = try await bench.discover(Self.address)
        #expect(try await bench.pair(peripheral) == .authenticationFailed)
        #expect(!peripheral.isPaired)
    }

    @Test func theDefaultDelegateImplementationRefuses() async throws {
        final class Silent: PairingAgentDelegate, @unchecked Sendable {}
        let bench = try await Self.bench(PeerPairing(capability: "DisplayYesNo"))
        defer { bench.tearDown() }
        let silent = Silent()
        let agent = PairingAgent(central: bench.central, capability: .displayYesNo, delegate: silent)
        agent.start()
        defer { agent.stop() }
        try await bench.fixture.waitForProperty("/org/bluez/hci1", "Pairable", .boolean(true))
        let peripheral = try await bench.discover(Self.address)
        #expect(try await bench.pair(peripheral) == .authenticationFailed)
    }

    @Test func numericComparisonWithAVirtualPeerAsksTheInitiator() async throws {
        let bench = try await Self.bench(PeerPairing(capability: "KeyboardDisplay"))
        defer { bench.tearDown() }
        _ = try await bench.centralAgent(.keyboardDisplay) { $0.accept() }
        let peripheral = try await bench.discover(Self.address)
        let mark = bench.recorder.mark
        #expect(try await bench.pair(peripheral) == nil)
        guard case .confirmation? = bench.recorder.requests("central", since: mark).first?.kind else {
            Issue.record("expected RequestConfirmation: \(bench.recorder.events)")
            return
        }
        #expect(peripheral.isPaired && peripheral.isBonded)
    }

    @Test(arguments: [(654_321 as UInt32, true), (111_111, false)])
    func passkeyEntryTypesWhatThePeerShows(typed: UInt32, succeeds: Bool) async throws {
        let bench = try await Self.bench(PeerPairing(capability: "DisplayOnly", displayedPasskey: 654_321))
        defer { bench.tearDown() }
        _ = try await bench.centralAgent(.keyboardOnly) { $0.provide(passkey: typed) }
        let peripheral = try await bench.discover(Self.address)
        let mark = bench.recorder.mark
        let error = try await bench.pair(peripheral)
        #expect(bench.recorder.requests("central", since: mark).map(\.kind) == [.passkey])
        #expect(error == (succeeds ? nil : .authenticationFailed))
        #expect(peripheral.isPaired == succeeds)
    }

    @Test func aDisplayingInitiatorIsShownThePasskeyAndNeedsNotAnswer() async throws {
        let bench = try await Self.bench(PeerPairing(capability: "KeyboardOnly"))
        defer { bench.tearDown() }
        _ = try await bench.centralAgent(.displayOnly, answering: nil)
        let peripheral = try await bench.discover(Self.address)
        let mark = bench.recorder.mark
        #expect(try await bench.pair(peripheral) == nil)
        let requests = bench.recorder.requests("central", since: mark)
        guard case .displayPasskey(let passkey, let entered)? = requests.first?.kind else {
            Issue.record("expected DisplayPasskey: \(bench.recorder.events)")
            return
        }
        #expect(passkey <= 999_999 && entered == 0)
        #expect(requests.first?.isAnswered == true)
    }

    @Test func aPeerThatRefusesFailsAuthentication() async throws {
        let bench = try await Self.bench(PeerPairing(capability: "NoInputNoOutput", accepts: false))
        defer { bench.tearDown() }
        _ = try await bench.centralAgent(.noInputNoOutput) { $0.accept() }
        let peripheral = try await bench.discover(Self.address)
        #expect(try await bench.pair(peripheral) == .authenticationFailed)
    }

    @Test func anUnansweredRequestIsCanceledAtTheAgentsDeadline() async throws {
        let bench = try await Self.bench(PeerPairing(capability: "DisplayYesNo"))
        defer { bench.tearDown() }
        _ = try await bench.centralAgent(.displayYesNo, answering: nil, requestTimeout: .milliseconds(300))
        let peripheral = try await bench.discover(Self.address)
        let mark = bench.recorder.mark
        #expect(try await bench.pair(peripheral) == .authenticationFailed)
        let canceled = bench.recorder.canceled("central", since: mark)
        #expect(canceled.count == 1)
        #expect(canceled.first?.answer == .canceled)
        // A late answer changes nothing.
        canceled.first?.accept()
        #expect(canceled.first?.answer == .canceled)
    }

    @Test func bluetoothdsPairingTimeoutEndsWithAuthenticationTimeoutAndCancelsTheRequest() async throws {
        let bench = try await Self.bench(PeerPairing(capability: "DisplayYesNo"))
        defer { bench.tearDown() }
        bench.simulator.pairingTimeout = .milliseconds(300)
        _ = try await bench.centralAgent(.displayYesNo, answering: nil, requestTimeout: .seconds(30))
        let peripheral = try await bench.discover(Self.address)
        let mark = bench.recorder.mark
        #expect(try await bench.pair(peripheral) == .authenticationTimeout)
        try await bench.recorder.wait(since: mark, "Cancel from bluetoothd") {
            if case .canceled("central", _) = $0 { return true }
            return false
        }
    }

    @Test func cancelPairingWhileTheAgentIsAskedEndsWithAuthenticationCanceled() async throws {
        let bench = try await Self.bench(PeerPairing(capability: "DisplayYesNo"))
        defer { bench.tearDown() }
        var target: Peripheral?
        _ = try await bench.centralAgent(.displayYesNo) { _ in target?.cancelPairing() }
        let peripheral = try await bench.discover(Self.address)
        target = peripheral
        let mark = bench.recorder.mark
        #expect(try await bench.pair(peripheral) == .authenticationCanceled)
        try await bench.recorder.wait(since: mark, "the request cancelled") {
            if case .canceled("central", _) = $0 { return true }
            return false
        }
        #expect(!peripheral.isPaired)
    }

    @Test func bondsAreListedTrustedBlockedAndRemoved() async throws {
        let bench = try await Self.bench(nil)
        defer { bench.tearDown() }
        _ = try await bench.centralAgent(.noInputNoOutput) { $0.accept() }
        let peripheral = try await bench.discover(Self.address)
        #expect(bench.central.bondedPeripherals().isEmpty)
        #expect(try await bench.pair(peripheral) == nil)
        #expect(bench.central.bondedPeripherals().map(\.address) == [Self.address])

        #expect(try await flag { peripheral.setTrusted(true, completion: $0) } == nil)
        #expect(peripheral.isTrusted)
        #expect(try await flag { peripheral.setTrusted(false, completion: $0) } == nil)
        #expect(!peripheral.isTrusted)
        #expect(try await flag { peripheral.setBlocked(true, completion: $0) } == nil)
        #expect(peripheral.isBlocked)
        #expect(try await flag { peripheral.setBlocked(false, completion: $0) } == nil)
        #expect(!peripheral.isBlocked)

        try await removeBond(bench, peripheral)
        #expect(bench.central.bondedPeripherals().isEmpty)
        #expect(!peripheral.isPaired)
    }

    @Test func aResolvablePrivateAddressBecomesTheIdentityAddressAndThePeripheralKeepsWorking() async throws {
        let rpa = "5A:11:22:33:44:55"
        let identity = "C0:FF:EE:00:00:99"
        let bench = try await Self.bench(PeerPairing(identityAddress: identity), address: rpa, addressType: .random)
        defer { bench.tearDown() }
        _ = try await bench.centralAgent(.noInputNoOutput) { $0.accept() }
        let peripheral = try await bench.discover(rpa)
        let identifier = peripheral.identifier
        #expect(try await bench.pair(peripheral) == nil)
        try await bench.fixture.waitForSignal(timeout: .seconds(10), "Address change") { SimulatorFixture.changedValue($0, "Address") == .string(identity) }
        #expect(peripheral.currentAddress == identity)
        #expect(peripheral.address == rpa && peripheral.identifier == identifier)
        #expect(bench.central.bondedPeripherals().first === peripheral)
        // Still the same object: a read over the paired link works.
        let connected = EventRecorder<Bool>()
        final class Watcher: CentralManagerDelegate, @unchecked Sendable {
            let seen: EventRecorder<Bool>
            init(_ seen: EventRecorder<Bool>) { self.seen = seen }
            func centralManager(_ central: CentralManager, didConnect peripheral: Peripheral) {
                BleLoop.assumeIsolated { seen.append(true) }
            }
        }
        let watcher = Watcher(connected)
        bench.central.multiDelegate.addDelegate(watcher)
        bench.central.connect(peripheral)
        try await connected.wait(count: 1, timeout: .seconds(10))
        #expect(peripheral.state == .connected)
        try await removeBond(bench, peripheral)
        #expect(bench.central.bondedPeripherals().isEmpty)
    }
}

/// Runs a flag setter and returns its completion's error.
@BleLoop
func flag(_ body: (@escaping @Sendable (BleError?) -> Void) -> Void) async throws -> BleError? {
    let done = EventRecorder<BleError?>()
    body { error in BleLoop.assumeIsolated { done.append(error) } }
    try await done.wait(count: 1, timeout: .seconds(10))
    return done.events.first ?? nil
}
