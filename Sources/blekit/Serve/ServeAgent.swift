import BleCore
import Foundation

// @unchecked: immutable after init; the prompt is thread-safe and `post` only queues.
/// `blekit serve --agent`: the serving side's pairing agent. bluetoothd asks the default agent
/// when a central pairs with the served peripheral (the responder), so it registers as default;
/// the questions are answered as `blekit pair` answers them, and every one is printed, so the
/// passkey shown on both sides can be compared.
final class ServeAgent: PairingAgentDelegate, Sendable {
    private let prompt: PairingPrompt
    private let post: @Sendable (PeripheralEvent) -> Void

    init(prompt: PairingPrompt, post: @escaping @Sendable (PeripheralEvent) -> Void) {
        self.prompt = prompt
        self.post = post
    }

    func pairingAgent(_ agent: PairingAgent, didReceive request: PairingRequest) { prompt.pairingAgent(agent, didReceive: request) }
    func pairingAgent(_ agent: PairingAgent, didCancel request: PairingRequest) { post(.agentCanceled(request.deviceAddress)) }
    func pairingAgent(_ agent: PairingAgent, didRegister error: Error?) { post(.agentRegistered(error)) }
    func pairingAgentWasReleased(_ agent: PairingAgent) { post(.agentRegistered(CLIError("bluetoothd released the pairing agent"))) }
}
