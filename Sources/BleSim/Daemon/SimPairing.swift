import BleDBus
import BlueZVocabulary
import Foundation

/// One SMP pairing between an initiator's device object and its peer, with the agent calls of
/// both sides as bluetoothd 5.66 makes them.
///
/// The method follows LE Secure Connections' table from the two IO capabilities: the
/// initiator's is its `Pair` caller's agent's (NoInputNoOutput without one), the responder's is
/// its default agent's (an app on another simulated adapter) or its `PeerPairing` (a virtual
/// peripheral). Just Works asks only the responder (`RequestAuthorization`, as observed);
/// numeric comparison asks both (`RequestConfirmation` with the same passkey); passkey entry
/// shows the passkey on one side (`DisplayPasskey`) and asks the other (`RequestPasskey`).
/// Every request must be accepted; the first refusal ends it, and agents still asked get
/// `Cancel`, as do all of them when the pairing is cancelled or times out.
@BleLoop
final class SimPairing {
    /// How it ended.
    enum Outcome: Equatable {
        case success
        /// An agent refused, typed a wrong passkey or is missing: `AuthenticationFailed`.
        case failed(String)
        /// Nobody answered within the SMP timeout: `AuthenticationTimeout`.
        case timedOut
        /// `CancelPairing` or the link went down.
        case canceled
    }

    /// The pairing method the two IO capabilities select.
    enum Method: Equatable {
        case justWorks
        case numericComparison
        /// Which side types the passkey (the other shows it; both type when both are keyboards).
        case passkeyEntry(initiatorTypes: Bool, responderTypes: Bool)
    }

    /// The responder: an app's adapter (its device object for the initiator, and the default
    /// agent), or a virtual peripheral.
    enum Responder {
        case app(device: SimDevice, agent: AgentRegistry.Agent?)
        case virtual(PeerPairing)
    }

    private let simulator: Simulator
    private let initiatorPath: ObjectPath
    private let initiatorAgent: AgentRegistry.Agent?
    private let responder: Responder
    private var completion: (@BleLoop (Outcome) -> Void)?
    private var outstanding: [Int: AgentRegistry.Agent] = [:]
    private var nextRequest = 0
    private var stepsLeft = 0
    private var typed: [UInt32] = []
    private var timer: LoopTimer?
    private(set) var method: Method = .justWorks

    init(simulator: Simulator, initiatorPath: ObjectPath, initiatorAgent: AgentRegistry.Agent?, responder: Responder) {
        self.simulator = simulator
        self.initiatorPath = initiatorPath
        self.initiatorAgent = initiatorAgent
        self.responder = responder
    }

    // MARK: Method selection

    /// LE Secure Connections' mapping of IO capabilities to a method (Core 5.3, Vol 3, Part H,
    /// 2.3.5.1): NoInputNoOutput on either side is Just Works; two displays that can confirm
    /// compare numbers; a keyboard against a display types what the display shows.
    static func method(initiator: String, responder: String) -> Method {
        typealias C = BlueZ.AgentManager1.Capability
        if initiator == C.noInputNoOutput || responder == C.noInputNoOutput { return .justWorks }
        switch (initiator, responder) {
        case (C.displayOnly, C.displayOnly), (C.displayOnly, C.displayYesNo), (C.displayYesNo, C.displayOnly):
            return .justWorks
        case (C.displayYesNo, C.displayYesNo), (C.displayYesNo, C.keyboardDisplay), (C.keyboardDisplay, C.displayYesNo),
             (C.keyboardDisplay, C.keyboardDisplay):
            return .numericComparison
        case (C.keyboardOnly, C.keyboardOnly):
            return .passkeyEntry(initiatorTypes: true, responderTypes: true)
        case (C.keyboardOnly, _), (C.keyboardDisplay, C.displayOnly):
            return .passkeyEntry(initiatorTypes: true, responderTypes: false)
        default:
            // The responder is the keyboard: DisplayOnly/DisplayYesNo/KeyboardDisplay against
            // KeyboardOnly, DisplayOnly against KeyboardDisplay.
            return .passkeyEntry(initiatorTypes: false, responderTypes: true)
        }
    }

    // MARK: Running

    func start(_ completion: @escaping @BleLoop (Outcome) -> Void) {
        self.completion = completion
        let initiatorCapability = initiatorAgent?.capability ?? BlueZ.AgentManager1.Capability.noInputNoOutput
        let responderCapability: String
        switch responder {
        case .app(_, let agent): responderCapability = agent?.capability ?? BlueZ.AgentManager1.Capability.noInputNoOutput
        case .virtual(let peer): responderCapability = peer.capability
        }
        method = Self.method(initiator: initiatorCapability, responder: responderCapability)
        timer = LoopTimer.scheduled(after: simulator.pairingTimeout) { [weak self] in self?.end(.timedOut) }
        stepsLeft = 1
        switch method {
        case .justWorks:
            respond(ask: BlueZ.Agent1.Method.requestAuthorization, passkey: nil)
        case .numericComparison:
            let passkey = UInt32.random(in: 0...999_999)
            ask(initiatorAgent, path: initiatorPath, BlueZ.Agent1.Method.requestConfirmation, [.uint32(passkey)])
            respond(ask: BlueZ.Agent1.Method.requestConfirmation, passkey: passkey)
        case .passkeyEntry(let initiatorTypes, let responderTypes):
            var passkey = UInt32.random(in: 0...999_999)
            if case .virtual(let peer) = responder, !responderTypes || initiatorTypes { passkey = peer.displayedPasskey }
            if initiatorTypes {
                askPasskey(initiatorAgent, path: initiatorPath, expected: responderTypes ? nil : passkey)
            } else {
                show(initiatorAgent, path: initiatorPath, passkey: passkey)
            }
            switch responder {
            case .app(let device, let agent):
                if responderTypes {
                    askPasskey(agent, path: device.path, expected: initiatorTypes ? nil : passkey)
                } else {
                    show(agent, path: device.path, passkey: passkey)
                }
            case .virtual(let peer):
                // A virtual keyboard types what the initiator shows; a virtual display is done.
                if !peer.accepts { return end(.failed("the peer refused")) }
                if responderTypes, initiatorTypes { typed.append(passkey) }
            }
        }
        stepDone()
    }

    /// The responder's step of Just Works or numeric comparison.
    private func respond(ask member: String, passkey: UInt32?) {
        switch responder {
        case .app(let device, let agent):
            ask(agent, path: device.path, member, passkey.map { [.uint32($0)] } ?? [])
        case .virtual(let peer):
            if !peer.accepts { end(.failed("the peer refused")) }
        }
    }

    private func ask(_ agent: AgentRegistry.Agent?, path: ObjectPath, _ member: String, _ arguments: [DBusValue],
                     accept: @escaping @BleLoop ([DBusValue]) -> Bool = { _ in true }) {
        guard completion != nil else { return }
        guard let agent, let connection = simulator.connection else {
            // bluetoothd: "No agent available for request type …"; SMP fails.
            return end(.failed("no agent available for \(member)"))
        }
        stepsLeft += 1
        let id = nextRequest
        nextRequest += 1
        outstanding[id] = agent
        connection.callAtOnce(destination: agent.owner, path: agent.path, interface: BlueZ.Agent1.interface, member: member,
                              arguments: [.objectPath(path)] + arguments,
                              timeout: simulator.pairingTimeout + .seconds(5)) { [weak self] result in
            guard let self, self.outstanding.removeValue(forKey: id) != nil, self.completion != nil else { return }
            switch result {
            case .success(let body) where accept(body):
                self.stepDone()
            case .success:
                self.end(.failed("\(member) answered with a wrong passkey or shape"))
            case .failure(let error):
                self.end(.failed("\(member) refused: \(error)"))
            }
        }
    }

    private func askPasskey(_ agent: AgentRegistry.Agent?, path: ObjectPath, expected: UInt32?) {
        ask(agent, path: path, BlueZ.Agent1.Method.requestPasskey, []) { [weak self] body in
            guard body.count == 1, case .uint32(let value) = body[0], value <= 999_999 else { return false }
            if let expected { return value == expected }
            self?.typed.append(value)
            return true
        }
    }

    /// `DisplayPasskey` expects no reply (bluetoothd sends it with NO_REPLY_EXPECTED).
    private func show(_ agent: AgentRegistry.Agent?, path: ObjectPath, passkey: UInt32) {
        guard let agent, let connection = simulator.connection else {
            return end(.failed("no agent available for DisplayPasskey"))
        }
        var message = DBusMessage.methodCall(destination: agent.owner, path: agent.path, interface: BlueZ.Agent1.interface,
                                             member: BlueZ.Agent1.Method.displayPasskey,
                                             body: [.objectPath(path), .uint32(passkey), .uint16(0)])
        message.noReplyExpected = true
        _ = try? connection.send(message)
    }

    private func stepDone() {
        stepsLeft -= 1
        guard stepsLeft == 0, completion != nil else { return }
        if typed.count == 2, typed[0] != typed[1] { return end(.failed("the two sides typed different passkeys")) }
        end(.success)
    }

    /// Ends it (once): agents still asked get `Cancel`.
    func end(_ outcome: Outcome) {
        guard let completion else { return }
        self.completion = nil
        timer?.cancel()
        timer = nil
        if let connection = simulator.connection {
            for agent in Set(outstanding.values.map(\.owner)).compactMap({ owner in outstanding.values.first { $0.owner == owner } }) {
                var message = DBusMessage.methodCall(destination: agent.owner, path: agent.path, interface: BlueZ.Agent1.interface,
                                                     member: BlueZ.Agent1.Method.cancel)
                message.noReplyExpected = true
                _ = try? connection.send(message)
            }
        }
        outstanding.removeAll()
        if outcome != .success { DBusLog.debug("BleSim: pairing with \(initiatorPath) ended: \(outcome)") }
        completion(outcome)
    }
}
