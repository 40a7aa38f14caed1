import BleCore
import BleDSL
import Foundation
import Synchronization

/// A connected peripheral, driven with async/await (FXBlueToothAsync's `AsyncPeripheral`).
///
/// Every call ends: with its result, with `AsyncBleClientError` (the failed operation and the
/// `BleError` below), with `.timeout` when its optional timeout passes, or with
/// `CancellationError` as soon as its task is cancelled. Any number of calls may run at once,
/// also on the same characteristic (BleKit queues them per attribute); each gets its own answer.
/// The peripheral keeps its delegates: this type listens next to them.
public final class AsyncPeripheral: Sendable {
    /// The peripheral (FXBlueToothAsync's README uses `device.peripheral`; defect 29).
    public let peripheral: CBPeripheral
    let link: PeripheralLink
    private let commandPair = Mutex<(write: Characteristic, read: Characteristic)?>(nil)

    init(link: PeripheralLink) {
        self.link = link
        self.peripheral = link.peripheral
    }

    /// The peripheral's stable identifier.
    public var identifier: UUID { peripheral.identifier }
    /// Its name, when known.
    public var name: String? { peripheral.name }
    /// The connection state now.
    public var state: CBPeripheralState { peripheral.state }
    /// The ATT MTU of the current link (23 until BlueZ reports this link's, and while
    /// disconnected: a reconnect may negotiate less than the link before).
    public var mtu: Int { BleLoopBridge.sync { Int(self.link.peripheral.negotiatedMTU) } }
    /// The longest value one write of `type` carries; longer without-response writes are chunked.
    public func maximumWriteValueLength(for type: CBCharacteristicWriteType) -> Int { peripheral.maximumWriteValueLength(for: type) }
    /// The last RSSI BlueZ reported, nil when unknown.
    public var rssi: Int? { peripheral.rssi }

    // MARK: Discovery

    /// The services (all when `serviceUUIDs` is nil). A requested service BlueZ has not exported
    /// yet is waited for briefly, then reported as `.serviceNotFound`.
    ///
    /// Without `serviceUUIDs`, Generic Access (0x1800) and Generic Attribute (0x1801) are left
    /// out, as CoreBluetooth leaves them out: bluetoothd exports 0x1801 first, and iOS code that
    /// takes `services[0]` means the device's own first service. Ask for them by UUID to get them.
    public func discover(serviceUUIDs: [CBUUID]? = nil, timeout: TimeInterval? = nil) async throws -> [CBService] {
        let peripheral = self.peripheral
        let hideProfiles = serviceUUIDs?.isEmpty ?? true
        return try await awaitCall(.discoverServices, timeout: timeout) { call in
            peripheral.performDiscoverServices(serviceUUIDs) { result in
                call.finish(result
                    .map { services in hideProfiles ? services.filter { !Self.stackServices.contains($0.uuid) } : services }
                    .mapError { AsyncBleClientError.operationFailed(.discoverServices, $0) })
            }
        }
    }

    /// The services of the peripheral's own stack that CoreBluetooth does not list.
    private static let stackServices: Set<CBUUID> = [CBUUID(UInt16(0x1800)), CBUUID(UInt16(0x1801))]

    /// The characteristics of `service` (all when `characteristicUUIDs` is nil).
    public func discover(characteristicUUIDs: [CBUUID]? = nil, for service: CBService, timeout: TimeInterval? = nil) async throws -> [CBCharacteristic] {
        let peripheral = self.peripheral
        return try await awaitCall(.discoverCharacteristics, timeout: timeout) { call in
            call.finish(peripheral.performDiscoverCharacteristics(characteristicUUIDs, for: service)
                .mapError { AsyncBleClientError.operationFailed(.discoverCharacteristics, $0) })
        }
    }

    /// The services `service` includes (all when `includedServiceUUIDs` is nil), in its
    /// Include declarations' order; `service.includedServices` holds them too. They are the
    /// same objects as those of `discover(serviceUUIDs:)`.
    public func discover(includedServiceUUIDs: [CBUUID]? = nil, for service: CBService, timeout: TimeInterval? = nil) async throws -> [CBService] {
        let peripheral = self.peripheral
        return try await awaitCall(.discoverIncludedServices, timeout: timeout) { call in
            call.finish(peripheral.performDiscoverIncludedServices(includedServiceUUIDs, for: service)
                .mapError { AsyncBleClientError.operationFailed(.discoverIncludedServices, $0) })
        }
    }

    /// The descriptors of `characteristic`.
    public func discoverDescriptors(for characteristic: CBCharacteristic, timeout: TimeInterval? = nil) async throws -> [CBDescriptor] {
        let peripheral = self.peripheral
        return try await awaitCall(.discoverDescriptors, timeout: timeout) { call in
            call.finish(peripheral.performDiscoverDescriptors(for: characteristic)
                .mapError { AsyncBleClientError.operationFailed(.discoverDescriptors, $0) })
        }
    }

    // MARK: Read and write

    /// Reads the value. The answer is this call's alone: it never shows up in a notification
    /// stream (defect 27), and two reads of equal UUIDs never collide (defect 28).
    public func read(for characteristic: CBCharacteristic, timeout: TimeInterval? = nil) async throws -> Data {
        let peripheral = self.peripheral
        return try await awaitCall(.readValue, timeout: timeout) { call in
            peripheral.performRead(characteristic) { result in
                call.finish(result.mapError { AsyncBleClientError.operationFailed(.readValue, $0) })
            }
        }
    }

    /// Reads a descriptor's value.
    public func read(for descriptor: CBDescriptor, timeout: TimeInterval? = nil) async throws -> Data {
        let peripheral = self.peripheral
        return try await awaitCall(.readValue, timeout: timeout) { call in
            peripheral.performRead(descriptor) { result in
                call.finish(result.mapError { AsyncBleClientError.operationFailed(.readValue, $0) })
            }
        }
    }

    /// Writes `data`. With response: returns when the peripheral acknowledged it. Without
    /// response: `data` is split into chunks of `maximumWriteValueLength(for: .withoutResponse)`
    /// bytes, each sent when flow control has room; returns when all were handed to BlueZ.
    public func write(_ data: Data, to characteristic: CBCharacteristic, type: CBCharacteristicWriteType = .withResponse,
                      timeout: TimeInterval? = nil) async throws {
        let peripheral = self.peripheral
        if type == .withoutResponse {
            let deadline = Deadline(timeout)
            return try await link.writeWithoutResponse(data, to: characteristic, deadline: deadline)
        }
        try await awaitCall(.writeValue, timeout: timeout) { (call: PendingCall<Void>) in
            peripheral.performWrite(data, characteristic, type) { error in
                if let error { call.fail(AsyncBleClientError.operationFailed(.writeValue, error)) } else { call.succeed(()) }
            }
        }
    }

    // MARK: Notifications

    /// The characteristic's notifications (or indications), from now on.
    ///
    /// Open as many as you like: each stream gets every value; notifications are enabled with
    /// the first stream and disabled when the last one ends (its task cancelled, its loop left).
    /// The stream ends with `AsyncBleClientError.disconnected` when the link drops or
    /// bluetoothd goes away, and with `.operationFailed(.notifications, …)` when enabling fails.
    public func notifications(for characteristic: CBCharacteristic,
                              bufferingPolicy: AsyncThrowingStream<Data, any Error>.Continuation.BufferingPolicy = .unbounded)
        -> AsyncThrowingStream<Data, any Error> {
        openStream(for: characteristic, bufferingPolicy: bufferingPolicy).stream
    }

    /// Makes a stream and registers it on the loop. Its end is wired up here, before the
    /// stream exists for anyone: a stream ended before the loop registers it (a task cancelled
    /// at once) is never registered, and one ended after is unregistered (issue 25).
    private func openStream(for characteristic: CBCharacteristic,
                            bufferingPolicy: AsyncThrowingStream<Data, any Error>.Continuation.BufferingPolicy)
        -> (stream: AsyncThrowingStream<Data, any Error>, continuation: AsyncThrowingStream<Data, any Error>.Continuation) {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: Data.self, throwing: (any Error).self, bufferingPolicy: bufferingPolicy)
        let link = self.link
        let subscriber = NotificationSubscriber(continuation)
        continuation.onTermination = { _ in
            // Marked before the loop hears of it: whichever of the two runs first, the
            // registration finds the mark or the removal finds the registration.
            subscriber.markEnded()
            LoopWork.run { link.unsubscribe(characteristic, subscriber) }
        }
        LoopBridge.later { link.subscribe(characteristic, subscriber) }
        return (stream, continuation)
    }

    /// Like `notifications(for:)`, but returns once notifications are on, so that nothing sent
    /// after this returns is missed.
    public func subscribe(to characteristic: CBCharacteristic, timeout: TimeInterval? = nil,
                          bufferingPolicy: AsyncThrowingStream<Data, any Error>.Continuation.BufferingPolicy = .unbounded)
        async throws -> AsyncThrowingStream<Data, any Error> {
        let (stream, continuation) = openStream(for: characteristic, bufferingPolicy: bufferingPolicy)
        let link = self.link
        do {
            try await awaitCall(.notifications, timeout: timeout) { (call: PendingCall<Void>) in link.waitUntilNotifying(characteristic, call) }
        } catch {
            // Nobody gets this stream: ending it now turns notifications off (when no other
            // stream wants them) instead of leaving that to whenever the stream is released.
            continuation.finish()
            throw error
        }
        return stream
    }

    // MARK: RSSI

    /// The RSSI BlueZ last saw (BlueZ has no RSSI read on a connected LE link; outside discovery
    /// this fails with `.operationFailed(.readRSSI, .notAvailable)`).
    public func readRSSI(timeout: TimeInterval? = nil) async throws -> Int {
        let peripheral = self.peripheral
        return try await awaitCall(.readRSSI, timeout: timeout) { call in
            call.finish(peripheral.performReadRSSI().mapError { AsyncBleClientError.operationFailed(.readRSSI, $0) })
        }
    }

    // MARK: Pairing

    /// Pairs (and bonds) through bluetoothd; the pairing agent of this central's connection
    /// (`AsyncPairingAgent(manager:)`), else the default agent, answers its questions.
    /// Cancelling the task calls `CancelPairing`.
    public func pair(timeout: TimeInterval? = nil) async throws {
        let peripheral = self.peripheral
        try await awaitCall(.pair, timeout: timeout) { (call: PendingCall<Void>) in
            // BleCore's own deadline stays behind ours, so a timeout here is reported as ours.
            let backstop = Duration.seconds((timeout ?? 60) + 5)
            peripheral.pair(timeout: backstop) { error in
                if let error { call.fail(AsyncBleClientError.operationFailed(.pair, error)) } else { call.succeed(()) }
            }
            call.onEnd(abandoned: { peripheral.cancelPairing() })
        }
    }

    // MARK: Commands (BleDSL's engine)

    /// Where `execute(_:)` writes commands and listens for their responses.
    public func useCommandCharacteristics(write: CBCharacteristic, read: CBCharacteristic) {
        commandPair.withLock { $0 = (write, read) }
    }

    /// Runs one `PeripheralOperationCommand` on BleDSL's engine (chunked writes with flow
    /// control, `filterData` → `checkResponse`, the command's own `timeOutInterval`) and returns
    /// the response's packets. Commands on the same characteristics queue behind each other.
    /// Cancelling the task cancels the command; `timeout` adds a deadline of the caller's.
    public func execute(_ command: PeripheralOperationCommand, write: CBCharacteristic? = nil, read: CBCharacteristic? = nil,
                        timeout: TimeInterval? = nil, isolation: isolated (any Actor)? = #isolation) async throws -> [Data] {
        let (write, read) = try characteristics(write, read)
        let link = self.link
        let box = LoopBound(command)
        return try await awaitCall(.execute, timeout: timeout) { (call: PendingCall<[Data]>) in
            let engine = link.engine(write: write, read: read)
            let token = engine.execute(box.value) { result in
                call.finish(result)
            }
            call.onEnd(abandoned: { token.cancel() })
        }
    }

    /// Runs a `longConnection` command as a stream: every `.longConnection` (and a final
    /// `.success`) yields its packets; `.failure`, a timeout or the link dropping end the stream
    /// with the error; ending the stream (cancelling its task) cancels the command.
    public func responses(to command: PeripheralOperationCommand, write: CBCharacteristic? = nil, read: CBCharacteristic? = nil)
        -> AsyncThrowingStream<[Data], any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: [Data].self, throwing: (any Error).self)
        let pair: (Characteristic, Characteristic)
        do { pair = try characteristics(write, read) } catch {
            continuation.finish(throwing: error)
            return stream
        }
        let link = self.link
        let box = LoopBound<PeripheralOperationCommand>(StreamingCommand(command))
        LoopBridge.later {
            let engine = link.engine(write: pair.0, read: pair.1)
            let streaming = box.value as? StreamingCommand
            let token = engine.execute(box.value) { result in
                switch result {
                case .success(let packets):
                    continuation.yield(packets)
                    if streaming?.lastVerdictWasFinal == true { continuation.finish() }
                case .failure(let error):
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in token.cancel() }
        }
        return stream
    }

    private func characteristics(_ write: Characteristic?, _ read: Characteristic?) throws -> (Characteristic, Characteristic) {
        if let write, let read { return (write, read) }
        guard let pair = commandPair.withLock({ $0 }) else {
            throw AsyncBleClientError.invalidState("no command characteristics: pass write: and read:, or call useCommandCharacteristics(write:read:)")
        }
        return (write ?? pair.write, read ?? pair.read)
    }
}

/// Wraps a command to learn whether a delivered response ended it (`.success`) or keeps it
/// listening (`.longConnection`); the engine calls it on the loop only.
final class StreamingCommand: PeripheralOperationCommand {
    private let inner: PeripheralOperationCommand
    private(set) var lastVerdictWasFinal = false

    init(_ inner: PeripheralOperationCommand) { self.inner = inner }

    var cmdData: Data { inner.cmdData }
    func filterData(_ data: Data) -> Data? { inner.filterData(data) }
    func checkResponse(_ dataGroup: [Data], data: Data) -> CheckResponseResult {
        let verdict = inner.checkResponse(dataGroup, data: data)
        if case .success = verdict { lastVerdictWasFinal = true }
        return verdict
    }
    func getLengthProtocol() -> PeripheralCommandLengthProtocol { inner.getLengthProtocol() }
    var timeOutInterval: TimeInterval { inner.timeOutInterval }
    var writeType: CharacteristicWriteType? { inner.writeType }
}

/// Reads loop state from any thread (the loop never waits for another thread).
enum BleLoopBridge {
    static func sync<T: Sendable>(_ body: @escaping @BleLoop @Sendable () -> T) -> T {
        if MainLoop.shared.isCurrent { return BleLoop.assumeIsolated { body() } }
        let result = Mutex<T?>(nil)
        let done = DispatchSemaphore(value: 0)
        LoopBridge.later {
            let value = body()
            result.withLock { $0 = value }
            done.signal()
        }
        done.wait()
        return result.withLock { $0 }!
    }
}
