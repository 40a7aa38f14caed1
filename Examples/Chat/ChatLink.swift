import Foundation

// @unchecked: used on the main queue only, like the peer that owns it.
/// Reliable messages over an unreliable packet pipe: splits, numbers, acknowledges, resends
/// what was not acknowledged, reassembles, and sends heartbeats so that a silent peer is
/// noticed even when BlueZ still reports the link as up.
final class ChatLink: @unchecked Sendable {
    struct Settings {
        /// Resend a packet not acknowledged within this time.
        var resendAfter = 0.4
        var maximumAttempts = 8
        var heartbeatEvery = 0.3
        /// Silence this long means the link is dead.
        var deadAfter = 1.5
        /// Drop the first transmission of packet 1 of every multi-packet message (shows the resend).
        var loseOnePacket = true
        /// Never resend (to show what the resend is for: the run then fails).
        var resend = true
    }

    private let settings: Settings
    private let transmit: (Data) -> Void
    private let packetLength: Int
    private var nextMessage: UInt8 = 0
    private var unacknowledged: [UInt16: (frame: ChatFrame, attempts: Int, sentAt: Date)] = [:]
    private var pending: [UInt8: (text: String, done: (Bool, Int, Int) -> Void, packets: Int, resends: Int)] = [:]
    private var partial: [UInt8: [UInt8: Data]] = [:]
    private var delivered: Set<UInt8> = []
    private var lastHeard = Date()
    private var timer: DispatchSourceTimer?
    private var lastHeartbeat = Date.distantPast
    private var silent = false
    /// A whole message arrived (reassembled), with its packet count.
    var onMessage: ((String, Int) -> Void)?
    /// No frame for `deadAfter` seconds.
    var onDead: ((Double) -> Void)?
    private(set) var isOpen = true

    init(packetLength: Int, settings: Settings, transmit: @escaping (Data) -> Void) {
        self.packetLength = packetLength
        self.settings = settings
        self.transmit = transmit
        let timer = DispatchSource.makeTimerSource(queue: .main)
        timer.schedule(deadline: .now() + 0.1, repeating: 0.1)
        timer.setEventHandler { [weak self] in self?.tick() }
        timer.resume()
        self.timer = timer
    }

    /// Sends `text`; `done(acknowledged, packets, resends)` once every packet was acknowledged or gave up.
    func send(_ text: String, done: @escaping (Bool, Int, Int) -> Void) {
        let message = nextMessage
        nextMessage &+= 1
        let frames = ChatFrame.split(text, message: message, packetLength: packetLength)
        pending[message] = (text, done, frames.count, 0)
        for frame in frames {
            unacknowledged[Self.key(frame)] = (frame, 1, Date())
            if settings.loseOnePacket && frames.count > 1 && frame.sequence == 1 { continue }
            transmit(frame.encoded)
        }
    }

    /// Stays quiet for `seconds` (no heartbeats, no acknowledgements): a frozen app, as the other side sees it.
    func goSilent(for seconds: Double) {
        silent = true
        DispatchQueue.main.asyncAfter(deadline: .now() + seconds) { [weak self] in self?.silent = false }
    }

    func receive(_ data: Data) {
        guard isOpen, !silent, let frame = ChatFrame(data) else { return }
        lastHeard = Date()
        switch frame.kind {
        case .heartbeat: break
        case .ack:
            let key = Self.key(frame)
            guard unacknowledged.removeValue(forKey: key) != nil else { return }
            finishIfAcknowledged(frame.message)
        case .data:
            transmit(ChatFrame(kind: .ack, message: frame.message, sequence: frame.sequence, total: frame.total).encoded)
            guard !delivered.contains(frame.message) else { return }
            partial[frame.message, default: [:]][frame.sequence] = frame.payload
            let parts = partial[frame.message] ?? [:]
            guard parts.count == Int(frame.total) else { return }
            let bytes = (0..<frame.total).compactMap { parts[$0] }.reduce(Data(), +)
            partial[frame.message] = nil
            delivered.insert(frame.message)
            onMessage?(String(decoding: bytes, as: UTF8.self), Int(frame.total))
        }
    }

    func close() {
        isOpen = false
        timer?.cancel()
        timer = nil
        for (_, entry) in pending { entry.done(false, entry.packets, entry.resends) }
        pending.removeAll()
    }

    private func tick() {
        guard isOpen else { return }
        let now = Date()
        if now.timeIntervalSince(lastHeard) > settings.deadAfter {
            let silence = now.timeIntervalSince(lastHeard)
            close()
            onDead?(silence)
            return
        }
        guard !silent else { return }
        if now.timeIntervalSince(lastHeartbeat) >= settings.heartbeatEvery {
            lastHeartbeat = now
            transmit(ChatFrame(kind: .heartbeat, message: 0, sequence: 0, total: 0).encoded)
        }
        guard settings.resend else { return }
        for (key, entry) in unacknowledged where now.timeIntervalSince(entry.sentAt) >= settings.resendAfter {
            guard entry.attempts < settings.maximumAttempts else {
                unacknowledged[key] = nil
                if let message = pending.removeValue(forKey: entry.frame.message) { message.done(false, message.packets, message.resends) }
                continue
            }
            unacknowledged[key] = (entry.frame, entry.attempts + 1, now)
            pending[entry.frame.message]?.resends += 1
            transmit(entry.frame.encoded)
        }
    }

    private func finishIfAcknowledged(_ message: UInt8) {
        guard !unacknowledged.keys.contains(where: { UInt8($0 >> 8) == message }), let entry = pending.removeValue(forKey: message) else { return }
        entry.done(true, entry.packets, entry.resends)
    }

    private static func key(_ frame: ChatFrame) -> UInt16 { UInt16(frame.message) << 8 | UInt16(frame.sequence) }
}
