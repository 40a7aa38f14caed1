import BleDBus
import Foundation

// @unchecked: an any-thread facade like `Peripheral`. The call it answers is loop-isolated;
// answers hop to the loop, and the answered flag is behind a lock.
/// One question bluetoothd asks the `PairingAgent` (an `org.bluez.Agent1` method call), answered
/// exactly once.
///
/// Answer with `accept()`, `provide(passkey:)`, `provide(pinCode:)`, `reject()` or `cancel()`,
/// from any thread, now or later. Only the first answer counts. A request left unanswered
/// until the agent's `requestTimeout` is answered `org.bluez.Error.Canceled`, and the delegate
/// hears `didCancel`, so bluetoothd never waits on BleKit.
public final class PairingRequest: Sendable {
    /// What is asked.
    public enum Kind: Sendable, Equatable {
        /// `RequestConfirmation`: does the peer show this passkey? (numeric comparison) Answer
        /// `accept()` or `reject()`.
        case confirmation(passkey: UInt32)
        /// `RequestPasskey`: type the passkey the peer shows. Answer `provide(passkey:)`.
        case passkey
        /// `DisplayPasskey`: show this passkey for the user to type on the peer; `entered` digits
        /// were typed so far. Needs no answer (bluetoothd expects none).
        case displayPasskey(passkey: UInt32, entered: UInt16)
        /// `RequestPinCode` (legacy BR/EDR pairing): answer `provide(pinCode:)`.
        case pinCode
        /// `DisplayPinCode` (legacy BR/EDR pairing): show it, then `accept()`.
        case displayPinCode(String)
        /// `RequestAuthorization`: may this peer pair without a passkey (Just Works)? Answer
        /// `accept()` or `reject()`.
        case authorization
        /// `AuthorizeService`: may this peer use the service with this UUID? Answer `accept()`
        /// or `reject()`.
        case serviceAuthorization(uuid: String)
    }

    /// How it was answered.
    public enum Answer: Sendable, Equatable {
        /// Accepted (or confirmed, or shown).
        case accepted
        /// A passkey was given.
        case passkey(UInt32)
        /// A PIN code was given.
        case pinCode(String)
        /// Refused: `org.bluez.Error.Rejected`.
        case rejected
        /// Abandoned: `org.bluez.Error.Canceled` (also after the deadline, or bluetoothd's `Cancel`).
        case canceled
    }

    /// What is asked.
    public let kind: Kind
    /// The peer's `Device1` object path (`/org/bluez/hci0/dev_…`).
    public let devicePath: String
    /// The peer's address, as in the device path or BlueZ's cache.
    public let deviceAddress: String?
    /// The adapter the pairing happens on (`hci0`).
    public var adapterName: String? { devicePath.split(separator: "/").dropFirst(2).first.map(String.init) }
    /// The central's `Peripheral` for the device, when this process's central knows it.
    public let peripheral: Peripheral?

    /// The answer, once given.
    public var answer: Answer? { answered.value }
    /// True once answered (by the app, the deadline or bluetoothd's `Cancel`).
    public var isAnswered: Bool { answered.value != nil }

    private let answered = Locked<Answer?>(nil)
    @BleLoop private var call: IncomingCall?
    @BleLoop private var deadline: LoopTimer?
    @BleLoop var onDeadline: (@BleLoop () -> Void)?

    @BleLoop init(kind: Kind, call: IncomingCall, deviceAddress: String?, peripheral: Peripheral?) {
        self.kind = kind
        self.call = call
        self.devicePath = call.arguments.first.flatMap { value -> String? in
            if case .objectPath(let path) = value { return path.rawValue }
            return nil
        } ?? ""
        self.deviceAddress = deviceAddress
        self.peripheral = peripheral
    }

    /// Starts the deadline; when it passes the request is answered `Canceled`.
    @BleLoop func arm(timeout: Duration) {
        deadline = LoopTimer.scheduled(after: timeout) { [weak self] in
            guard let self, !self.isAnswered else { return }
            BleLog.warning("pairing request \(self.kind) for \(self.devicePath) not answered within \(timeout); cancelled")
            self.answerOnLoop(.canceled, text: "Not answered within \(timeout)")
            self.onDeadline?()
        }
    }

    // MARK: Answers

    /// Accepts: confirms the passkey, authorizes the pairing or service, or says a shown code
    /// was displayed. For `.passkey` and `.pinCode` it rejects instead (they need a value).
    public func accept() {
        LoopBridge.async {
            switch self.kind {
            case .passkey, .pinCode:
                BleLog.warning("accept() on a \(self.kind) request needs a value; rejecting it")
                self.answerOnLoop(.rejected, text: "No value given")
            default:
                self.answerOnLoop(.accepted, text: "")
            }
        }
    }

    /// Answers a `.passkey` request (0…999999). Anything else, or a larger number, rejects.
    public func provide(passkey: UInt32) {
        LoopBridge.async {
            guard self.kind == .passkey, passkey <= 999_999 else {
                return self.answerOnLoop(.rejected, text: "Passkey not applicable")
            }
            self.answerOnLoop(.passkey(passkey), text: "")
        }
    }

    /// Answers a `.pinCode` request (1–16 characters). Anything else rejects.
    public func provide(pinCode: String) {
        LoopBridge.async {
            guard self.kind == .pinCode, (1...16).contains(pinCode.utf8.count) else {
                return self.answerOnLoop(.rejected, text: "PIN code not applicable")
            }
            self.answerOnLoop(.pinCode(pinCode), text: "")
        }
    }

    /// Refuses: `org.bluez.Error.Rejected`; the pairing fails.
    public func reject() {
        LoopBridge.async { self.answerOnLoop(.rejected, text: "Rejected by the application") }
    }

    /// Abandons: `org.bluez.Error.Canceled`; the pairing fails.
    public func cancel() {
        LoopBridge.async { self.answerOnLoop(.canceled, text: "Canceled by the application") }
    }

    /// Answers once; later answers are ignored.
    @BleLoop func answerOnLoop(_ answer: Answer, text: String) {
        guard answered.value == nil else { return }
        answered.value = answer
        deadline?.cancel()
        deadline = nil
        guard let call else { return }
        self.call = nil
        switch answer {
        case .accepted: call.reply()
        case .passkey(let value): call.reply([.uint32(value)])
        case .pinCode(let code): call.reply([.string(code)])
        case .rejected: call.fail(name: BlueZ.Agent1.ErrorName.rejected, message: text)
        case .canceled: call.fail(name: BlueZ.Agent1.ErrorName.canceled, message: text)
        }
    }
}
