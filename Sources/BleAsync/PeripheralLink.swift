import BleCore
import BleDSL
import Foundation

/// The loop side of one `AsyncPeripheral`: its notification streams, the calls waiting for
/// write-without-response room, and its command engines. It listens to the peripheral on the
/// loop (`PeripheralLoopObserver`) next to the DSL's engines and the delegates.
///
/// A notification stream hears notifications only (`didNotify`), never a read's answer
/// (defect 27); any number of streams may follow one characteristic, each gets every value,
/// and notifications stay enabled while at least one is open. Link loss ends every stream
/// with `AsyncBleClientError.disconnected`.
@BleLoop
final class PeripheralLink: PeripheralLoopObserver {
    /// The streams following one characteristic.
    @BleLoop
    private final class Channel {
        let characteristic: Characteristic
        /// By `NotificationSubscriber.order`.
        var subscribers: [UInt64: NotificationSubscriber] = [:]
        /// `subscribe(to:)` calls waiting for notifications to be on.
        var readyWaiters: [UInt64: PendingCall<Void>] = [:]
        init(characteristic: Characteristic) { self.characteristic = characteristic }
        var isEmpty: Bool { subscribers.isEmpty && readyWaiters.isEmpty }
    }

    let peripheral: Peripheral
    private weak var hub: CentralHub?
    private var channels: [ObjectIdentifier: Channel] = [:]
    private var roomWaiters: [UInt64: PendingCall<Void>] = [:]
    /// Write-without-response failures reported after the packet was queued, per characteristic.
    private var lateWriteErrors: [ObjectIdentifier: BleError] = [:]
    private var writersInFlight: [ObjectIdentifier: Int] = [:]
    private var engines: [String: CommandEngine] = [:]
    /// The read characteristics of those engines.
    private var commandReads: Set<ObjectIdentifier> = []
    private var nextID: UInt64 = 0
    /// Weak: the `AsyncPeripheral` holds this link, so a strong reference back kept both, the
    /// peripheral and its whole BlueZ session alive forever after the manager was released.
    private weak var asyncPeripheralStorage: AsyncPeripheral?

    init(peripheral: Peripheral, hub: CentralHub) {
        self.peripheral = peripheral
        self.hub = hub
    }

    /// The public face (one per peripheral and manager while the app holds it).
    var asyncPeripheral: AsyncPeripheral {
        if let asyncPeripheralStorage { return asyncPeripheralStorage }
        let made = AsyncPeripheral(link: self)
        asyncPeripheralStorage = made
        return made
    }

    var pendingCount: Int { channels.values.reduce(0) { $0 + $1.subscribers.count + $1.readyWaiters.count } + roomWaiters.count }

    private func makeID() -> UInt64 {
        nextID += 1
        return nextID
    }

    // MARK: Notifications

    /// Adds a stream; the first one of a characteristic enables notifications. A stream that
    /// ended before it got here is not added (its `unsubscribe` already ran or follows, and
    /// finds nothing).
    func subscribe(_ characteristic: Characteristic, _ subscriber: NotificationSubscriber) {
        guard !subscriber.isEnded else { return }
        guard peripheral.isLinkUp else {
            return subscriber.continuation.finish(throwing: AsyncBleClientError.disconnected(peripheral, .peripheralNotConnected))
        }
        let channel = self.channel(characteristic)
        channel.subscribers[subscriber.order] = subscriber
    }

    /// Resolves once notifications are on (at once when they already are).
    func waitUntilNotifying(_ characteristic: Characteristic, _ call: PendingCall<Void>) {
        guard peripheral.isLinkUp else {
            return call.fail(AsyncBleClientError.disconnected(peripheral, .peripheralNotConnected)).ignored
        }
        if Self.isSettledOn(characteristic), channels[ObjectIdentifier(characteristic)] != nil { return call.succeed(()).ignored }
        let channel = self.channel(characteristic)
        let id = makeID()
        guard call.onEnd(settled: { [weak self, weak channel] in
            channel?.readyWaiters[id] = nil
            self?.dropIfUnused(characteristic)
        }) else { return }
        channel.readyWaiters[id] = call
        if Self.isSettledOn(characteristic) { call.succeed(()) }
    }

    /// On, with no enable or disable queued behind: an "on" with a disable queued (the last
    /// stream just ended) and this channel's enable after it goes off in between, and a value
    /// sent then is lost to a caller `subscribe(to:)` already answered (seen in the soak).
    private static func isSettledOn(_ characteristic: Characteristic) -> Bool {
        characteristic.isNotifyingOnLoop && characteristic.pendingNotifyChanges == 0
    }

    private func channel(_ characteristic: Characteristic) -> Channel {
        let key = ObjectIdentifier(characteristic)
        if let channel = channels[key] { return channel }
        let channel = Channel(characteristic: characteristic)
        channels[key] = channel
        // Idempotent in BleCore: a subscription already on (the DSL's, the app's) is shared.
        peripheral.performSetNotify(true, characteristic)
        return channel
    }

    /// A stream ended: it leaves its channel; the last one turns notifications off.
    func unsubscribe(_ characteristic: Characteristic, _ subscriber: NotificationSubscriber) {
        guard let channel = channels[ObjectIdentifier(characteristic)],
              channel.subscribers[subscriber.order] === subscriber else { return }
        channel.subscribers[subscriber.order] = nil
        dropIfUnused(characteristic)
    }

    /// The last stream of a characteristic is gone: notifications are turned off.
    private func dropIfUnused(_ characteristic: Characteristic) {
        let key = ObjectIdentifier(characteristic)
        guard let channel = channels[key], channel.isEmpty else { return }
        channels[key] = nil
        // A command engine of ours listens to it for responses: it stays on for that.
        guard !commandReads.contains(key) else { return }
        if peripheral.isLinkUp { peripheral.performSetNotify(false, characteristic) }
    }

    func peripheral(_ peripheral: Peripheral, didNotify value: Data, for characteristic: Characteristic) {
        guard let channel = channels[ObjectIdentifier(characteristic)] else { return }
        for id in channel.subscribers.keys.sorted() { channel.subscribers[id]?.continuation.yield(value) }
    }

    func peripheral(_ peripheral: Peripheral, didReceive value: Data?, for characteristic: Characteristic, error: BleError?) {
        // Read answers come through each read's own completion, notifications through didNotify.
    }

    func peripheral(_ peripheral: Peripheral, notificationStateOf characteristic: Characteristic, isOn: Bool, error: BleError?) {
        guard let channel = channels[ObjectIdentifier(characteristic)] else { return }
        if isOn {
            // An earlier enable's answer, with a disable and our enable still queued: not yet.
            guard Self.isSettledOn(characteristic) else { return }
            for call in channel.readyWaiters.values.map({ $0 }) { call.succeed(()) }
            return
        }
        guard let error else { return }
        // Enabling failed: the streams cannot get anything; they say why. BleCore fails the
        // enable of a lost link before it reports the loss: that is the link loss, said as such.
        let key = ObjectIdentifier(characteristic)
        channels[key] = nil
        // BleCore still counts them as wanted and would re-arm them on the next link (an enable
        // failed by link loss comes before `didLoseLink`, which then no longer sees this channel).
        if !commandReads.contains(key) { peripheral.performSetNotify(false, characteristic) }
        let failure = peripheral.isLinkUp ? AsyncBleClientError.operationFailed(.notifications, error)
            : AsyncBleClientError.disconnected(peripheral, error)
        for call in channel.readyWaiters.values.map({ $0 }) { call.fail(failure) }
        for subscriber in channel.subscribers.values { subscriber.continuation.finish(throwing: failure) }
    }

    // MARK: Write without response

    /// Resolves when BleKit's write-without-response backlog is empty.
    func waitForRoom(_ call: PendingCall<Void>) {
        guard peripheral.isLinkUp else {
            return call.fail(AsyncBleClientError.disconnected(peripheral, .peripheralNotConnected)).ignored
        }
        guard peripheral.hasWriteBacklog else { return call.succeed(()).ignored }
        let id = makeID()
        guard call.onEnd(settled: { [weak self] in self?.roomWaiters[id] = nil }) else { return }
        roomWaiters[id] = call
    }

    func peripheralIsReadyToWriteWithoutResponse(_ peripheral: Peripheral) {
        for call in roomWaiters.values.map({ $0 }) { call.succeed(()) }
    }

    func peripheral(_ peripheral: Peripheral, didWrite characteristic: Characteristic, error: BleError?) {
        let key = ObjectIdentifier(characteristic)
        guard let error, writersInFlight[key, default: 0] > 0 else { return }
        lateWriteErrors[key] = error
    }

    /// Writes `data` in chunks of the link's write-without-response size (ATT MTU − 3), each
    /// when BleKit's flow control has room, and returns once all were handed to BlueZ.
    func writeWithoutResponse(_ data: Data, to characteristic: Characteristic, deadline: Deadline) async throws {
        let key = ObjectIdentifier(characteristic)
        writersInFlight[key, default: 0] += 1
        defer {
            writersInFlight[key, default: 1] -= 1
            if writersInFlight[key] == 0 { writersInFlight[key] = nil; lateWriteErrors[key] = nil }
        }
        let size = max(1, peripheral.writeLimit(for: .withoutResponse))
        var chunks: [Data] = []
        var offset = data.startIndex
        repeat {
            let end = data.index(offset, offsetBy: size, limitedBy: data.endIndex) ?? data.endIndex
            chunks.append(Data(data[offset..<end]))
            offset = end
        } while offset < data.endIndex
        for chunk in chunks {
            try Task.checkCancellation()
            if peripheral.hasWriteBacklog {
                let link = self
                try await awaitCall(.writeValue, timeout: try deadline.remaining(.writeValue)) { call in link.waitForRoom(call) }
            }
            if let late = lateWriteErrors.removeValue(forKey: key) { throw AsyncBleClientError.operationFailed(.writeValue, late) }
            var refused: BleError?
            peripheral.performWrite(chunk, characteristic, .withoutResponse) { error in refused = error }
            if let refused { throw AsyncBleClientError.operationFailed(.writeValue, refused) }
        }
        if peripheral.hasWriteBacklog {
            let link = self
            try await awaitCall(.writeValue, timeout: try deadline.remaining(.writeValue)) { call in link.waitForRoom(call) }
        }
        if let late = lateWriteErrors.removeValue(forKey: key) { throw AsyncBleClientError.operationFailed(.writeValue, late) }
    }

    // MARK: Commands

    /// The DSL engine for this pair of characteristics (one per pair, so commands on it queue).
    /// Notifications of `read` are (re)enabled first: queued behind any disable still pending
    /// (a notification stream that just ended), they end up on.
    func engine(write: Characteristic, read: Characteristic) -> CommandEngine {
        if peripheral.isLinkUp { peripheral.performSetNotify(true, read) }
        let key = "\(ObjectIdentifier(write).hashValue)/\(ObjectIdentifier(read).hashValue)"
        if let engine = engines[key] { return engine }
        let engine = CommandEngine(listeningTo: peripheral, write: write, read: read)
        engines[key] = engine
        commandReads.insert(ObjectIdentifier(read))
        return engine
    }

    // MARK: Link loss

    func peripheral(_ peripheral: Peripheral, didLoseLink error: BleError?) {
        let failure = AsyncBleClientError.disconnected(peripheral, error)
        let ended = channels.values.map { $0 }
        channels.removeAll()
        for channel in ended {
            for call in channel.readyWaiters.values.map({ $0 }) { call.fail(failure) }
            for id in channel.subscribers.keys.sorted() { channel.subscribers[id]?.continuation.finish(throwing: failure) }
            // Nobody listens any more: BleKit must not re-arm these on the next link.
            peripheral.performSetNotify(false, channel.characteristic)
        }
        for call in roomWaiters.values.map({ $0 }) { call.fail(failure) }
    }
}
