import BleRuntime
import CMosquitto
import Foundation

/// An MQTT client on libmosquitto, driven by BleKit's loop: its socket is a loop watch, its
/// keep-alive a loop timer, so BLE events and MQTT traffic share one thread and no lock.
///
/// It reconnects by itself with a doubling back-off, keeps messages published while offline in a
/// bounded buffer (counting what it drops), and resubscribes after every reconnection.
@BleLoop
public final class MQTTClient {
    /// Where the connection stands.
    public enum State: Sendable, Equatable {
        /// Not started.
        case idle
        /// A connection attempt is under way.
        case connecting
        /// The broker accepted the connection.
        case connected
        /// The last attempt failed or the connection was lost; the next attempt is scheduled.
        case waitingToReconnect
        /// `close()` was called, or the connection was dropped on purpose.
        case closed
    }

    /// One message received on a subscription.
    public struct Message: Sendable {
        /// The topic it was published on.
        public var topic: String
        /// Its payload.
        public var payload: Data
        /// Whether it is a retained message (sent because we subscribed, not because someone published now).
        public var retained: Bool
    }

    /// The options the client was made with.
    public let options: MQTTOptions
    /// Where the connection stands.
    public private(set) var state: State = .idle
    /// Messages libmosquitto confirmed: written whole to the broker's socket (QoS 0) or
    /// acknowledged by the broker (QoS 1 and 2). What was only queued is not counted.
    public private(set) var publishedMessages = 0
    /// Messages dropped because the offline buffer was full.
    public var droppedMessages: Int { buffer.dropped }
    /// Messages waiting in the offline buffer.
    public var bufferedMessages: Int { buffer.count }
    /// Messages libmosquitto accepted but has not confirmed yet: QoS 1 and 2 waiting for the
    /// broker's acknowledgement (libmosquitto sends them again after a reconnection), QoS 0
    /// still in its send queue (taken back into the offline buffer if the connection dies).
    public var unconfirmedMessages: Int { pending.count }
    /// Messages libmosquitto refused outright (a topic with wildcards, a payload too large).
    public private(set) var refusedMessages = 0
    /// Successful connections so far (the first and every reconnection).
    public private(set) var connections = 0
    /// Why the last connection attempt or connection failed, for logs and tools.
    public private(set) var lastError: String?

    /// Called after each successful connection (before the offline buffer is flushed), so the
    /// owner can publish its "online" state first.
    public var onConnect: (@BleLoop () -> Void)?
    /// Called when the connection is lost or an attempt fails.
    public var onDisconnect: (@BleLoop (String) -> Void)?
    /// Called for every message on a subscription.
    public var onMessage: (@BleLoop (Message) -> Void)?
    /// Called for every message libmosquitto confirmed (see `publishedMessages`), with the tag it
    /// was published with, so an owner can count its own kinds of message.
    public var onPublished: (@BleLoop (UInt8) -> Void)?

    /// A message libmosquitto accepted and has not confirmed, by message id.
    private struct Pending {
        var tag: UInt8
        var sequence: Int
        /// Kept for QoS 0 only: libmosquitto drops its unsent QoS 0 packets when it reconnects,
        /// and keeps (and resends) QoS 1 and 2 messages itself.
        var message: OfflineBuffer.Message?
    }
    private var pending: [Int32: Pending] = [:]
    private var sequence = 0
    /// libmosquitto may write a QoS 0 packet, and confirm it, inside `mosquitto_publish`, before
    /// its message id is known here.
    private var sending = false
    private var confirmedWhileSending: Int32?

    nonisolated(unsafe) private var handle: OpaquePointer?
    private var buffer: OfflineBuffer
    private var subscriptions: [(pattern: String, qos: Int32)] = []
    private var readWatch: FileDescriptorWatch?
    private var writeWatch: FileDescriptorWatch?
    private(set) var watchedSocket: Int32 = -1
    /// TCP_CORK is on while a burst of publishes is written (one D-Bus batch of advertisements):
    /// libmosquitto writes each packet as it is published, and without the cork each becomes
    /// its own TCP segment, whose sending (and, on loopback, receiving) the kernel charges here.
    private(set) var corked = false
    private var uncorkTimer: LoopTimer?
    private var housekeeping: LoopTimer?
    private var reconnectTimer: LoopTimer?
    /// A broker that never answers (a dropped SYN, a silent proxy) would leave an attempt
    /// pending for the kernel's two minutes.
    private var attemptDeadline: LoopTimer?
    private var nextDelay: Duration
    /// Set after the first connect call: later attempts reuse its host and port (mosquitto_reconnect).
    private var attempted = false

    private static let libraryReady: Bool = {
        mosquitto_lib_init() == MOSQ_ERR_SUCCESS.rawValue
    }()

    /// Why the client could not be created.
    public enum SetupError: Error, CustomStringConvertible {
        /// libmosquitto refused a setting.
        case library(String)

        /// What failed.
        public var description: String {
            switch self {
            case .library(let detail): return "libmosquitto: \(detail)"
            }
        }
    }

    /// A client for `options`; call `start()` to connect.
    public init(options: MQTTOptions) throws(SetupError) {
        self.options = options
        buffer = OfflineBuffer(capacity: options.offlineBufferCapacity)
        nextDelay = options.reconnectDelay
        guard MQTTClient.libraryReady else { throw .library("mosquitto_lib_init failed") }
        guard let created = mosquitto_new(options.clientID, true, nil) else { throw .library("mosquitto_new failed (out of memory or bad client id)") }
        handle = created
        mosquitto_user_data_set(created, Unmanaged.passUnretained(self).toOpaque())
        mosquitto_int_option(created, MOSQ_OPT_PROTOCOL_VERSION, Int32(MQTT_PROTOCOL_V311))
        if let username = options.username {
            try Self.check(mosquitto_username_pw_set(created, username, options.password), "username/password")
        }
        if let tls = options.tls {
            try Self.check(mosquitto_tls_set(created, tls.caFile, tls.caPath, tls.certificateFile, tls.keyFile, nil), "TLS files")
            if tls.insecure { try Self.check(mosquitto_tls_insecure_set(created, true), "TLS insecure") }
        }
        if let will = options.will {
            let bytes = Array(will.payload.utf8)
            try Self.check(mosquitto_will_set(created, will.topic, Int32(bytes.count), bytes, will.qos, will.retain), "will")
        }
        mosquitto_connect_callback_set(created) { _, context, code in
            guard let context else { return }
            let client = Unmanaged<MQTTClient>.fromOpaque(context).takeUnretainedValue()
            BleLoop.assumeIsolated { client.connected(code: code) }
        }
        mosquitto_disconnect_callback_set(created) { _, context, code in
            guard let context else { return }
            let client = Unmanaged<MQTTClient>.fromOpaque(context).takeUnretainedValue()
            BleLoop.assumeIsolated { client.lost("connection closed (\(MQTTClient.describe(code)))") }
        }
        mosquitto_message_callback_set(created) { _, context, message in
            guard let context, let message else { return }
            let client = Unmanaged<MQTTClient>.fromOpaque(context).takeUnretainedValue()
            let topic = message.pointee.topic.map { String(cString: $0) } ?? ""
            let length = Int(max(0, message.pointee.payloadlen))
            let payload = message.pointee.payload.map { Data(bytes: $0, count: length) } ?? Data()
            let received = Message(topic: topic, payload: payload, retained: message.pointee.retain)
            BleLoop.assumeIsolated { client.onMessage?(received) }
        }
        mosquitto_publish_callback_set(created) { _, context, mid in
            guard let context else { return }
            let client = Unmanaged<MQTTClient>.fromOpaque(context).takeUnretainedValue()
            BleLoop.assumeIsolated { client.confirmed(mid) }
        }
    }

    deinit {
        if let handle { mosquitto_destroy(handle) }
    }

    private static func check(_ code: Int32, _ what: String) throws(SetupError) {
        guard code == MOSQ_ERR_SUCCESS.rawValue else { throw .library("\(what): \(describe(code))") }
    }

    nonisolated static func describe(_ code: Int32) -> String {
        if code == MOSQ_ERR_ERRNO.rawValue { return String(cString: strerror(errno)) }
        return mosquitto_strerror(code).map { String(cString: $0) } ?? "error \(code)"
    }

    // MARK: Connection

    /// Starts connecting; the client keeps trying until `close()`.
    public func start() {
        guard state == .idle else { return }
        housekeeping = LoopTimer.scheduled(after: .seconds(1), repeating: .seconds(1)) { [weak self] in self?.tick() }
        attempt()
    }

    /// Sends DISCONNECT (so the broker does not publish the will) and stops.
    public func close() {
        guard state != .closed else { return }
        if let handle, state == .connected {
            mosquitto_disconnect(handle)
            _ = mosquitto_loop_write(handle, 1)
        }
        shutDown()
    }

    /// Drops the connection without DISCONNECT and stops, as a killed process would: the broker
    /// publishes the will. For failover tests and for `blekit gateway`'s crash drill.
    public func dropConnectionWithoutDisconnect() {
        guard state != .closed else { return }
        if let handle {
            let socket = mosquitto_socket(handle)
            if socket >= 0 { shutdown(socket, Int32(SHUT_RDWR)) }
        }
        shutDown()
    }

    private func shutDown() {
        state = .closed
        removeWatches()
        housekeeping?.cancel()
        reconnectTimer?.cancel()
        attemptDeadline?.cancel()
        attemptDeadline = nil
        housekeeping = nil
        reconnectTimer = nil
        if let handle {
            mosquitto_destroy(handle)
            self.handle = nil
        }
    }

    private func attempt() {
        guard let handle, state != .closed else { return }
        state = .connecting
        let code = attempted
            ? mosquitto_reconnect_async(handle)
            : mosquitto_connect_async(handle, options.host, options.port, options.keepAlive)
        attempted = true
        attemptDeadline?.cancel()
        let limit = options.connectTimeout
        attemptDeadline = LoopTimer.scheduled(after: limit) { [weak self] in
            guard let self, self.state == .connecting else { return }
            self.failed("no answer from \(self.options.host):\(self.options.port) within \(limit)")
        }
        guard code == MOSQ_ERR_SUCCESS.rawValue else {
            failed("connect failed: \(Self.describe(code))")
            return
        }
        installWatches()
    }

    private func installWatches() {
        guard let handle else { return }
        let socket = mosquitto_socket(handle)
        guard socket >= 0 else { return }
        if socket != watchedSocket {
            removeWatches()
            watchedSocket = socket
            readWatch = FileDescriptorWatch(descriptor: socket) { [weak self] events in self?.readable(events) }
        }
        updateWriteInterest()
    }

    /// Corks the socket until the loop has run the rest of what is ready now.
    private func cork() {
        guard !corked, watchedSocket >= 0 else { return }
        var on: Int32 = 1
        guard setsockopt(watchedSocket, Int32(IPPROTO_TCP), TCP_CORK, &on, socklen_t(MemoryLayout<Int32>.size)) == 0 else { return }
        corked = true
        uncorkTimer = LoopTimer.scheduled(after: .zero) { [weak self] in self?.uncork() }
    }

    /// Uncorks; `socketIsOpen` false when the socket is being dropped (its descriptor may be
    /// closed already, and then could name another file by now).
    private func uncork(socketIsOpen: Bool = true) {
        uncorkTimer?.cancel()
        uncorkTimer = nil
        guard corked else { return }
        corked = false
        guard socketIsOpen, watchedSocket >= 0 else { return }
        var off: Int32 = 0
        _ = setsockopt(watchedSocket, Int32(IPPROTO_TCP), TCP_CORK, &off, socklen_t(MemoryLayout<Int32>.size))
    }

    private func removeWatches() {
        uncork(socketIsOpen: false)
        readWatch?.cancel()
        writeWatch?.cancel()
        readWatch = nil
        writeWatch = nil
        watchedSocket = -1
    }

    /// Watches for writability only while libmosquitto has bytes queued, or a write watch would fire continuously.
    private func updateWriteInterest() {
        guard let handle, watchedSocket >= 0 else { return }
        if mosquitto_want_write(handle) {
            if writeWatch == nil {
                writeWatch = FileDescriptorWatch(descriptor: watchedSocket, events: .writable) { [weak self] events in self?.writable(events) }
            }
        } else if let watch = writeWatch {
            watch.cancel()
            writeWatch = nil
        }
    }

    private func readable(_ events: FileDescriptorWatch.Events) {
        guard let handle, state == .connecting || state == .connected else { return }
        let code = mosquitto_loop_read(handle, 1)
        guard code == MOSQ_ERR_SUCCESS.rawValue else {
            lost("read failed: \(Self.describe(code))")
            return
        }
        updateWriteInterest()
    }

    private func writable(_ events: FileDescriptorWatch.Events) {
        guard let handle, state == .connecting || state == .connected else { return }
        let code = mosquitto_loop_write(handle, 1)
        guard code == MOSQ_ERR_SUCCESS.rawValue else {
            lost("write failed: \(Self.describe(code))")
            return
        }
        updateWriteInterest()
    }

    private func tick() {
        guard let handle, state == .connected || state == .connecting else { return }
        let code = mosquitto_loop_misc(handle)
        if code != MOSQ_ERR_SUCCESS.rawValue && state == .connected {
            lost("keep-alive failed: \(Self.describe(code))")
            return
        }
        updateWriteInterest()
    }

    private func connected(code: Int32) {
        guard let handle else { return }
        guard code == 0 else {
            let reason = mosquitto_connack_string(code).map { String(cString: $0) } ?? "refused (\(code))"
            failed("broker refused the connection: \(reason)")
            return
        }
        attemptDeadline?.cancel()
        attemptDeadline = nil
        state = .connected
        connections += 1
        lastError = nil
        nextDelay = options.reconnectDelay
        for subscription in subscriptions {
            mosquitto_subscribe(handle, nil, subscription.pattern, subscription.qos)
        }
        onConnect?()
        for message in buffer.drain() { send(message) }
        updateWriteInterest()
    }

    private func lost(_ reason: String) {
        guard state == .connected || state == .connecting else { return }
        failed(reason)
    }

    private func failed(_ reason: String) {
        guard state != .closed else { return }
        lastError = reason
        attemptDeadline?.cancel()
        attemptDeadline = nil
        removeWatches()
        state = .waitingToReconnect
        rebufferUnsentQoS0()
        onDisconnect?(reason)
        let delay = nextDelay
        nextDelay = min(nextDelay * 2, options.maximumReconnectDelay)
        reconnectTimer = LoopTimer.scheduled(after: delay) { [weak self] in self?.attempt() }
    }

    // MARK: Messages

    /// Publishes `payload` on `topic`; while offline it waits in the bounded buffer. `tag` comes
    /// back through `onPublished` once libmosquitto confirms the message.
    public func publish(_ topic: String, _ payload: Data, qos: Int32 = 0, retain: Bool = false, tag: UInt8 = 0) {
        let message = OfflineBuffer.Message(topic: topic, payload: payload, qos: qos, retain: retain, tag: tag)
        guard state == .connected else {
            if state != .closed { buffer.append(message) }
            return
        }
        send(message)
        updateWriteInterest()
    }

    /// Publishes a UTF-8 string.
    public func publish(_ topic: String, _ text: String, qos: Int32 = 0, retain: Bool = false, tag: UInt8 = 0) {
        publish(topic, Data(text.utf8), qos: qos, retain: retain, tag: tag)
    }

    private func send(_ message: OfflineBuffer.Message) {
        guard let handle else { return }
        cork()
        var mid: Int32 = 0
        sending = true
        confirmedWhileSending = nil
        let code = message.payload.withUnsafeBytes { bytes in
            mosquitto_publish(handle, &mid, message.topic, Int32(bytes.count), bytes.baseAddress, message.qos, message.retain)
        }
        sending = false
        if code == MOSQ_ERR_SUCCESS.rawValue {
            if confirmedWhileSending == mid {
                count(message.tag)
            } else {
                track(mid, message)
            }
        } else if code == MOSQ_ERR_NO_CONN.rawValue || code == MOSQ_ERR_CONN_LOST.rawValue || code == MOSQ_ERR_ERRNO.rawValue {
            // libmosquitto queued a QoS 1 or 2 message before the write failed and sends it again
            // after reconnecting; a QoS 0 one is ours to keep.
            if message.qos > 0 { track(mid, message) } else { buffer.append(message) }
            lost("publish failed: \(Self.describe(code))")
        } else {
            // A topic libmosquitto refuses (wildcards, bad UTF-8) is the caller's error, not the network's.
            refusedMessages += 1
            lastError = "publish to \(message.topic) refused: \(Self.describe(code))"
        }
    }

    private func track(_ mid: Int32, _ message: OfflineBuffer.Message) {
        sequence += 1
        pending[mid] = Pending(tag: message.tag, sequence: sequence, message: message.qos == 0 ? message : nil)
    }

    private func confirmed(_ mid: Int32) {
        if let entry = pending.removeValue(forKey: mid) {
            count(entry.tag)
        } else if sending {
            confirmedWhileSending = mid
        }
    }

    private func count(_ tag: UInt8) {
        publishedMessages += 1
        onPublished?(tag)
    }

    /// QoS 0 packets libmosquitto had not written when the connection died: it frees them when
    /// it reconnects, so they go back to the offline buffer, oldest first, to be sent again.
    private func rebufferUnsentQoS0() {
        let unsent = pending.filter { $0.value.message != nil }.sorted { $0.value.sequence < $1.value.sequence }
        for (mid, entry) in unsent {
            pending[mid] = nil
            if let message = entry.message { buffer.append(message) }
        }
    }

    /// Subscribes to `pattern` now (when connected) and after every reconnection.
    public func subscribe(_ pattern: String, qos: Int32 = 1) {
        subscriptions.append((pattern, qos))
        if state == .connected, let handle {
            mosquitto_subscribe(handle, nil, pattern, qos)
            updateWriteInterest()
        }
    }
}
