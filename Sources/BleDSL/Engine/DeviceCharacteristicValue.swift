import BleRuntime
import Synchronization
import Foundation

extension PeripheralDevice {
    // Unchecked: an open class (FXBlueTooth's users subclass it) cannot be checked Sendable, and
    // dropping Sendable or `open` would break their code; its mutable state is behind `state`,
    // and the engine it drives is `@BleLoop`.
    /// The command engine: writes `PeripheralOperationCommand`s to a write characteristic and
    /// judges the packets of a read characteristic, one command at a time, in FIFO order.
    ///
    /// Each command: `cmdData` is split by its length protocol (MTU − 3 by default) and written
    /// with flow control (the next with-response chunk after the previous one is acknowledged;
    /// without-response chunks while `canSendWriteWithoutResponse`); only packets **from the read
    /// characteristic** go through `filterData` then `checkResponse`; `.success`/`.failure` end the
    /// command, `.goon` keeps the buffer and restarts the command's own timeout,
    /// `.longConnection` delivers and keeps listening until the returned token is cancelled.
    /// A disconnect fails the running and queued commands at once. Completions run on BleKit's
    /// loop thread, after the engine's state is updated, never twice for one command (streams
    /// excepted, by design).
    open class DeviceCharacteristicValue: CharacteristicValue, @unchecked Sendable {
        /// `Result` of a command: every packet of the response.
        public typealias Completion = (Result<[Data], Error>) -> Void
        /// `Result` of a command: the packets concatenated.
        public typealias SingleCompletion = (Result<Data, Error>) -> Void

        /// The peripheral the characteristics belong to; setting it starts listening to it.
        public var peripheral: Peripheral? {
            get { state.withLock { $0.peripheral } }
            set {
                let old = state.withLock { state -> Peripheral? in
                    let old = state.peripheral
                    state.peripheral = newValue
                    return old
                }
                guard old !== newValue else { return }
                let peripherals = LoopBound((old, newValue))
                LoopBridge.async { [engine] in
                    let (old, new) = peripherals.value
                    old?.removeLoopObserver(engine)
                    new?.addLoopObserver(engine)
                }
            }
        }
        /// Packets from this characteristic are responses.
        public var readCharacteristic: BleCore.Characteristic? {
            get { state.withLock { $0.readCharacteristic } }
            set { state.withLock { $0.readCharacteristic = newValue } }
        }
        /// Commands are written here.
        public var writeCharacteristic: BleCore.Characteristic? {
            get { state.withLock { $0.writeCharacteristic } }
            set { state.withLock { $0.writeCharacteristic = newValue } }
        }

        private struct Shared {
            weak var peripheral: Peripheral?
            var readCharacteristic: BleCore.Characteristic?
            var writeCharacteristic: BleCore.Characteristic?
            var missing: MissingAttribute?
        }

        /// What the last discovery did not find (set by `CharacteristicAdapter`): commands then
        /// fail with `.attributeNotFound` naming it instead of `.characteristicsNotReady`.
        public var missingAttribute: MissingAttribute? {
            get { state.withLock { $0.missing } }
            set { state.withLock { $0.missing = newValue } }
        }

        private let state = LoopLock(Shared())
        private let engine = CommandEngine()

        /// An engine with no characteristics yet.
        public init() {}

        /// An engine for known characteristics.
        public convenience init(peripheral: Peripheral?, writeCharacteristic: BleCore.Characteristic?, readCharacteristic: BleCore.Characteristic?) {
            self.init()
            self.writeCharacteristic = writeCharacteristic
            self.readCharacteristic = readCharacteristic
            self.peripheral = peripheral
        }

        /// Queues `option`; `completion` gets every packet of the response (or the error).
        ///
        /// Returns a token to cancel it. Fails with `PeripheralCommandError.characteristicsNotReady`
        /// (asynchronously, like every other outcome) when a characteristic is missing.
        @discardableResult
        open func executable(option: PeripheralOperationCommand, completion: Completion? = nil) -> CommandToken {
            let token = engine.makeToken()
            // One look at the shared state: the four attributes as they are now, together.
            let request = state.withLock { shared in
                CommandRequest(id: token.id, option: option, completion: completion, peripheral: shared.peripheral,
                               write: shared.writeCharacteristic, read: shared.readCharacteristic, missing: shared.missing)
            }
            if MainLoop.shared.isCurrent {
                // Issued on the loop (from a callback, or the previous command's completion): into
                // the engine at once, with no closure to allocate.
                BleLoop.assumeIsolated(CommandEngine.enqueueInline, with: (engine, request))
            } else {
                let box = LoopBound(request)
                LoopBridge.async { [engine] in engine.enqueue(box.value) }
            }
            return token
        }

        /// Queues a GATT read ("what is the LED state?") in the same FIFO as the commands: of
        /// `characteristic` (any discovered service), or of the read characteristic when nil.
        /// `completion` gets the value, or `.attributeNotFound` naming the UUID, `.readFailed`,
        /// `.timeout` after `timeout` seconds, `.disconnected`.
        ///
        /// A notification of the same characteristic arriving while the read is pending is
        /// taken as its reply (BlueZ does not tell them apart).
        @discardableResult
        public final func readValue(for characteristic: BluetoothUUID? = nil, timeout: TimeInterval = 20,
                            completion: @escaping (Result<Data, Error>) -> Void) -> CommandToken {
            enqueueRead(characteristic: characteristic, descriptor: nil, timeout: timeout, completion: completion)
        }

        /// Queues a read of `descriptor` on `characteristic` (the read characteristic when nil),
        /// in the same FIFO as the commands.
        @discardableResult
        public final func readValue(forDescriptor descriptor: BluetoothUUID, of characteristic: BluetoothUUID? = nil, timeout: TimeInterval = 20,
                            completion: @escaping (Result<Data, Error>) -> Void) -> CommandToken {
            enqueueRead(characteristic: characteristic, descriptor: descriptor, timeout: timeout, completion: completion)
        }

        private func enqueueRead(characteristic: BluetoothUUID?, descriptor: BluetoothUUID?, timeout: TimeInterval,
                                 completion: @escaping (Result<Data, Error>) -> Void) -> CommandToken {
            let token = engine.makeToken()
            let request = ReadRequest(id: token.id, peripheral: peripheral, characteristic: characteristic, descriptor: descriptor,
                                      fallback: readCharacteristic, timeout: timeout, completion: completion)
            let box = LoopBound(request)
            LoopBridge.async { [engine] in engine.enqueueRead(box.value) }
            return token
        }

        /// Queues `option`; `singleCompletion` gets the response's packets concatenated.
        ///
        /// Disfavoured, so a trailing closure means `completion:` (FXBlueTooth's README passes
        /// `{ result in … packets.count … }` and means the packets): both labels would accept it.
        @_disfavoredOverload
        @discardableResult
        open func executable(option: PeripheralOperationCommand, singleCompletion: SingleCompletion? = nil) -> CommandToken {
            executable(option: option) { result in
                singleCompletion?(result.map { $0.reduce(Data(), +) })
            }
        }

        /// Cancels every queued, running and streaming command.
        open func cancelAll() {
            LoopBridge.async { [engine] in engine.failAll(PeripheralCommandError.cancelled) }
        }

        /// The link dropped: everything queued or running fails with `.disconnected` at once.
        open func peripheralDidDisconnect(error: Error?) {
            LoopBridge.async { [engine] in engine.failAll(PeripheralCommandError.disconnected) }
        }

        // MARK: CharacteristicValue — the engine listens to its peripheral itself, so events
        // forwarded by PeripheralDevice are ignored here (they would arrive twice).

        /// Ignored: the engine receives its peripheral's events directly.
        open func peripheral(_ peripheral: Peripheral, didWriteValueFor characteristic: BleCore.Characteristic, error: Error?) {}
        /// Ignored: the engine receives its peripheral's events directly.
        open func peripheral(_ peripheral: Peripheral, didUpdateValueFor characteristic: BleCore.Characteristic, error: Error?) {}
        /// Ignored: the engine receives its peripheral's events directly.
        open func peripheral(_ peripheral: Peripheral, didUpdateNotificationStateFor characteristic: BleCore.Characteristic, error: Error?) {}

        /// Number of commands queued or running (streams excluded), for diagnostics and tests.
        @BleLoop public var pendingCommandCount: Int { engine.pendingCount }
    }
}

/// A command on its way to the loop: its option, completion and the attributes it was issued
/// for. Not `Sendable` (FXBlueTooth's option and completion are not): it crosses to the loop in
/// `LoopBound`, once, and is used only there.
struct CommandRequest {
    let id: UInt64
    let option: PeripheralOperationCommand
    let completion: PeripheralDevice.DeviceCharacteristicValue.Completion?
    let peripheral: Peripheral?
    let write: BleCore.Characteristic?
    let read: BleCore.Characteristic?
    let missing: MissingAttribute?
}

/// A read command on its way to the loop, where it is used exclusively. Not `Sendable` (its
/// completion is the app's closure): it crosses to the loop in `LoopBound`, once, as `CommandRequest` does.
struct ReadRequest {
    let id: UInt64
    let peripheral: Peripheral?
    let characteristic: BluetoothUUID?
    let descriptor: BluetoothUUID?
    let fallback: BleCore.Characteristic?
    let timeout: TimeInterval
    let completion: (Result<Data, Error>) -> Void
}
