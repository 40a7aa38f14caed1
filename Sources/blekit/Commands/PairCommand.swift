import BleCore
import Foundation

/// `blekit pair ADDRESS`: pairs (and bonds) through a pairing agent that asks on the terminal.
enum PairCommand: BlekitCommand {
    static let name = "pair"
    static let synopsis = "ADDRESS"
    static let summary = "pair and bond with a device; passkeys are asked or shown on the terminal"
    static let options: [OptionSpec] = [
        .value("--capability", "IO", "the agent's IO capability: \(IOCapability.allCases.map(\.rawValue).joined(separator: ", ")) (default KeyboardDisplay)"),
        .value("--passkey", "NUMBER", "answer a passkey request with this number instead of asking"),
        .flag("--yes", "accept confirmations and authorizations without asking (needed when not on a terminal)"),
    ] + ConnectedDevice.options
    static let details = """
    The device must advertise (or be known to BlueZ). Numeric comparison shows the passkey and asks
    y/N; passkey entry asks for the number the device shows (or takes --passkey); Just Works asks
    to authorize (or takes --yes). Example: blekit pair C0:FF:EE:00:00:02 --yes
    """

    @MainActor
    static func run(_ invocation: Invocation) async -> ExitCode {
        guard invocation.positionals.count == 1 else { return invocation.usage("wants one ADDRESS", help: help) }
        let capabilityText = invocation.arguments.value("--capability") ?? IOCapability.keyboardDisplay.rawValue
        guard let capability = IOCapability.allCases.first(where: { $0.rawValue.lowercased() == capabilityText.lowercased() }) else {
            return invocation.usage("--capability: '\(capabilityText)' is not one of \(IOCapability.allCases.map(\.rawValue).joined(separator: ", "))", help: help)
        }
        var passkey: UInt32?
        if let text = invocation.arguments.value("--passkey") {
            guard let value = UInt32(text), value <= 999_999 else { return invocation.usage("--passkey wants 0…999999, not '\(text)'", help: help) }
            passkey = value
        }
        do {
            let seconds = try invocation.arguments.seconds("--timeout", default: 10)
            let session = try await CentralSession.open(invocation)
            defer { session.close() }
            let peripheral = try await session.find(invocation.positionals[0], seconds: seconds)
            if peripheral.isPaired {
                invocation.out("\(peripheral.address) is already paired\(peripheral.isBonded ? " and bonded" : ""); `blekit bonds --remove \(peripheral.address)` forgets it")
                return .success
            }
            let prompt = PairingPrompt(invocation: invocation, passkey: passkey, acceptAll: invocation.arguments.has("--yes"))
            let agent = PairingAgent(central: session.manager, capability: capability, delegate: prompt)
            agent.start()
            defer { agent.stop() }
            let outcome = PairingOutcome()
            peripheral.pair(timeout: .seconds(max(30, seconds * 3))) { error in outcome.finish(error) }
            let error = await outcome.wait()
            if let error {
                throw CLIError("pairing with \(peripheral.address) failed: \(error.description)", CentralSession.exitCode(for: error))
            }
            invocation.out("paired with \(peripheral.name ?? peripheral.address) \(peripheral.address)\(peripheral.isBonded ? ", bonded" : " (not bonded)")")
            await session.disconnect(peripheral)
            return .success
        } catch let error as CLIError {
            return invocation.fail(error)
        } catch let error as ParsedArguments.UsageError {
            return invocation.usage(error.description, help: help)
        } catch {
            return invocation.fail(CLIError("\(error)"))
        }
    }
}

// @unchecked: state behind `lock`.
/// The end of one `pair()`, awaited once.
final class PairingOutcome: @unchecked Sendable {
    private let lock = NSLock()
    private var result: BleError??
    private var continuation: CheckedContinuation<BleError?, Never>?

    func finish(_ error: BleError?) {
        lock.lock()
        guard result == nil else { lock.unlock(); return }
        result = .some(error)
        let waiting = continuation
        continuation = nil
        lock.unlock()
        waiting?.resume(returning: error)
    }

    func wait() async -> BleError? {
        await withCheckedContinuation { continuation in
            lock.lock()
            if let result { lock.unlock(); continuation.resume(returning: result); return }
            self.continuation = continuation
            lock.unlock()
        }
    }
}

// @unchecked: immutable after init; questions are asked off the loop.
/// Answers bluetoothd's pairing questions: from the command line, or by asking on the terminal.
final class PairingPrompt: PairingAgentDelegate, @unchecked Sendable {
    private let invocation: Invocation
    private let passkey: UInt32?
    private let acceptAll: Bool

    init(invocation: Invocation, passkey: UInt32?, acceptAll: Bool) {
        self.invocation = invocation
        self.passkey = passkey
        self.acceptAll = acceptAll
    }

    func pairingAgent(_ agent: PairingAgent, didReceive request: PairingRequest) {
        let who = request.deviceAddress ?? "the device"
        switch request.kind {
        case .confirmation(let shown):
            ask("Does \(who) show \(String(format: "%06u", shown))? [y/N] ", request) { $0 ? request.accept() : request.reject() }
        case .authorization:
            ask("Pair with \(who) without a passkey (Just Works)? [y/N] ", request) { $0 ? request.accept() : request.reject() }
        case .serviceAuthorization(let uuid):
            ask("Allow \(who) to use service \(uuid)? [y/N] ", request) { $0 ? request.accept() : request.reject() }
        case .passkey:
            if let passkey {
                invocation.out("answering the passkey request with \(String(format: "%06u", passkey))")
                request.provide(passkey: passkey)
                return
            }
            guard isatty(STDIN_FILENO) == 1 else {
                invocation.fail("\(who) asks for the passkey it shows; give it with --passkey NUMBER")
                request.reject()
                return
            }
            DispatchQueue.global().async {
                FileHandle.standardError.write(Data("Type the passkey \(who) shows: ".utf8))
                if let line = readLine(), let value = UInt32(line.trimmingCharacters(in: .whitespaces)), value <= 999_999 {
                    request.provide(passkey: value)
                } else {
                    request.reject()
                }
            }
        case .displayPasskey(let shown, _):
            invocation.out("type \(String(format: "%06u", shown)) on \(who)")
        case .pinCode:
            invocation.fail("\(who) asks for a legacy PIN code, which blekit pair does not support; pair with bluetoothctl")
            request.reject()
        case .displayPinCode(let code):
            invocation.out("type PIN \(code) on \(who)")
            request.accept()
        }
    }

    private func ask(_ question: String, _ request: PairingRequest, _ answer: @escaping @Sendable (Bool) -> Void) {
        if acceptAll {
            invocation.out(question.replacingOccurrences(of: " [y/N] ", with: "") + " yes (--yes)")
            answer(true)
            return
        }
        guard isatty(STDIN_FILENO) == 1 else {
            invocation.fail("\(question.replacingOccurrences(of: " [y/N] ", with: "")) — not on a terminal, so refused; pass --yes to accept")
            answer(false)
            return
        }
        DispatchQueue.global().async {
            FileHandle.standardError.write(Data(question.utf8))
            let reply = readLine()?.trimmingCharacters(in: .whitespaces).lowercased() ?? ""
            answer(reply == "y" || reply == "yes")
        }
    }
}
