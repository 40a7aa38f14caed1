import BleCore
import BleDBus
import BleTestSupport
import BlueZVocabulary
import Foundation

/// What the scenario's agents and pairing report, in order.
enum AgentEvent {
    case registered(side: String, error: String?)
    case request(side: String, PairingRequest)
    case paired(BleError?)
    case removed(BleError?)
}

/// Accepts every pairing request and records it, for one side. (`BleCore.PairingAgent` in full:
/// this module has a raw `PairingAgent` of its own, and a method naming that one would not
/// implement the protocol.)
final class AcceptingAgentDelegate: PairingAgentDelegate, @unchecked Sendable {
    let side: String
    let events: EventRecorder<AgentEvent>

    init(side: String, events: EventRecorder<AgentEvent>) {
        self.side = side
        self.events = events
    }

    func pairingAgent(_ agent: BleCore.PairingAgent, didReceive request: PairingRequest) {
        events.appendFromAnyThread(.request(side: side, request))
        request.accept()
    }

    func pairingAgent(_ agent: BleCore.PairingAgent, didRegister error: Error?) {
        events.appendFromAnyThread(.registered(side: side, error: error.map { "\($0)" }))
    }
}

extension PairingScenarios {
    /// BleKit's `PairingAgent` on both sides: the central's own agent (asked about its `pair()`)
    /// and the serving side's default agent (asked as the responder), both DisplayYesNo. With
    /// LE Secure Connections that is numeric comparison: both are asked to confirm the same
    /// passkey. Both devices' objects are removed at the end, so no bond is left on either side.
    static let bothAgents = IntegrationScenario(
        "pairing.bothAgents", "BleKit's PairingAgent on the central and on the serving side (default agent), both DisplayYesNo: pair() asks both, with the same passkey when it is numeric comparison."
    ) { context in
        _ = try await context.peer()
        let events = EventRecorder<AgentEvent>()
        let serving = AcceptingAgentDelegate(side: "serving", events: events)
        let servingAgent = BleCore.PairingAgent(options: CentralManagerOptions(bus: context.backend.bleBus), capability: .displayYesNo,
                                                delegate: serving, makeDefault: true)
        servingAgent.start()
        // The agents hold their delegates weakly, as CoreBluetooth does: the cleanup keeps them.
        context.onCleanup { servingAgent.stop(); _ = serving }
        let central = try await context.central()
        try await startCentralAgent(central, events: events, context: context)
        context.step("agents registered: central DisplayYesNo, serving DisplayYesNo (default)")

        let peripheral = try await context.discoverPeer(central)
        peripheral.pair(timeout: .seconds(60)) { error in events.appendFromAnyThread(.paired(error)) }
        let outcome = try await events.first(timeout: .seconds(70), "pair() result") { if case .paired = $0 { return true }; return false }
        guard case .paired(let error) = outcome else { throw ScenarioFailure("unexpected \(outcome)") }
        let ownRequests = events.events.compactMap { if case .request("central", let r) = $0 { return r }; return nil }
        let servingRequests = events.events.compactMap { if case .request("serving", let r) = $0 { return r }; return nil }
        context.step("pair() → \(error.map { "\($0)" } ?? "paired")")
        try context.expect(error == nil, "pair() failed: \(String(describing: error))")
        context.step("central agent asked \(ownRequests.map { describe($0.kind) })")
        context.step("serving agent asked \(servingRequests.map { describe($0.kind) })")
        try context.expect(!servingRequests.isEmpty, "the responder's (default) agent was not asked")
        if case .confirmation(let a)? = ownRequests.first?.kind, case .confirmation(let b)? = servingRequests.first?.kind {
            try context.expect(a == b, "the two sides confirmed different passkeys (\(a), \(b))")
            context.step("both confirmed the same passkey")
        }
        try context.expect(peripheral.isPaired && peripheral.isBonded, "not Paired/Bonded after pair()")
        context.step("Paired \(peripheral.isPaired), Bonded \(peripheral.isBonded)")

        try await removeBondsOnBothSides(central, peripheral, events: events, context: context)
        context.step("bonds removed on both sides")
    }

    /// Starts the central's own DisplayYesNo agent (accepting, stopped at clean-up) and waits
    /// until it and the serving side's agent, started before, are registered.
    @BleLoop static func startCentralAgent(_ central: CentralManager, events: EventRecorder<AgentEvent>,
                                           context: ScenarioContext) async throws {
        let own = AcceptingAgentDelegate(side: "central", events: events)
        let centralAgent = BleCore.PairingAgent(central: central, capability: .displayYesNo, delegate: own)
        centralAgent.start()
        context.onCleanup { centralAgent.stop(); _ = own }
        for side in ["serving", "central"] {
            let event = try await events.first(timeout: context.eventDeadline, "\(side) agent registered") {
                if case .registered(side, _) = $0 { return true }
                return false
            }
            if case .registered(_, let error?) = event { throw ScenarioFailure("the \(side) agent did not register: \(error)") }
        }
    }

    /// Forgets the bond on both sides: the peer keeps its own otherwise, and refuses later pairings.
    @BleLoop static func removeBondsOnBothSides(_ central: CentralManager, _ peripheral: Peripheral, events: EventRecorder<AgentEvent>,
                                                context: ScenarioContext) async throws {
        try await removeCentralsBond(central, peripheral, events: events, context: context)
        try await removeServingSidesBond(central, context: context)
    }

    /// The central forgets the peripheral (BleKit's `removeBond`, which also ends the link).
    @BleLoop static func removeCentralsBond(_ central: CentralManager, _ peripheral: Peripheral, events: EventRecorder<AgentEvent>,
                                            context: ScenarioContext) async throws {
        central.removeBond(peripheral) { error in events.appendFromAnyThread(.removed(error)) }
        let removal = try await events.first(timeout: context.eventDeadline, "removeBond") { if case .removed = $0 { return true }; return false }
        if case .removed(let failure?) = removal { throw ScenarioFailure("removeBond failed: \(failure)") }
    }

    /// The serving adapter forgets the central (RemoveDevice there).
    ///
    /// With a GATT application of this process serving, do this only after the application is
    /// unregistered when the central had subscribed: bluetoothd 5.66 (and BlueZ master as of
    /// 2026) keeps a bonded central's CCC values after its device is removed, and when the
    /// application's service goes away it frees the characteristics before sending Service
    /// Changed, which clears those orphaned values through the freed characteristics: a
    /// segfault (seen in `peripheralManager.flowWithPairing`; BleSim's README, "bluetoothd's
    /// crash when a removed bonded central had subscribed").
    @BleLoop static func removeServingSidesBond(_ central: CentralManager, context: ScenarioContext) async throws {
        if let centralAddress = central.adapterAddress {
            let adapter = try BlueZ.rootPath.appending(context.backend.peripheralAdapter)
            let device = try ObjectPath("\(adapter.rawValue)/dev_\(centralAddress.replacingOccurrences(of: ":", with: "_"))")
            try await context.call("RemoveDevice on the serving side", adapter, BlueZ.Adapter1.interface, BlueZ.Adapter1.Method.removeDevice,
                                   [.objectPath(device)])
        }
    }

    private static func describe(_ kind: PairingRequest.Kind) -> String {
        switch kind {
        case .confirmation: return "RequestConfirmation"
        case .passkey: return "RequestPasskey"
        case .displayPasskey: return "DisplayPasskey"
        case .pinCode: return "RequestPinCode"
        case .displayPinCode: return "DisplayPinCode"
        case .authorization: return "RequestAuthorization"
        case .serviceAuthorization(let uuid): return "AuthorizeService \(uuid)"
        }
    }
}
