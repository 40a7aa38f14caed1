import BleDBus

/// One characteristic's notifications on one link: how they reach us (AcquireNotify's socket
/// or StartNotify's signals) and the socket and watch that belong to it.
///
/// Its life is the link's: link loss ends it, and a reply or socket event that arrives for an
/// ended subscription is recognised by identity and dropped — a late StartNotify reply can no
/// longer mark the next link's channel as started (the "deaf after reconnect" defect).
@BleLoop
final class NotifySubscription {
    /// The two ways BlueZ delivers notifications.
    enum Path {
        case acquire
        case start
    }

    enum State {
        /// The call is out; for StartNotify, values arriving now are delivered (the peripheral
        /// may notify before the reply, bleak #374).
        case enabling(Path)
        /// Notifications come on our end of bluetoothd's SEQPACKET socket, which this
        /// subscription owns: released with it, ended or not, the socket closes.
        case acquired(SeqPacketSocket)
        /// Notifications come as `PropertiesChanged(Value)`.
        case started
        /// Notifications come from the socket another manager of the process acquired
        /// (`AcquiredNotifyShare`): bluetoothd gives one socket per characteristic.
        case riding
        /// Over: link loss, disable, or failure.
        case ended
    }

    /// The link it belongs to (`Peripheral.linkGeneration`).
    let link: UInt64
    private(set) var state: State
    /// AcquireNotify asked again after "Notify acquired"; ending the subscription drops it.
    var retry: LoopTimer?

    init(link: UInt64, path: Path) {
        self.link = link
        self.state = .enabling(path)
    }

    var isOn: Bool {
        switch state {
        case .acquired, .started, .riding: return true
        case .enabling, .ended: return false
        }
    }

    var isEnded: Bool {
        if case .ended = state { return true }
        return false
    }

    /// Values in `PropertiesChanged` are ours only on the StartNotify path: on the socket path
    /// they are another client's session (or a ghost of an old one) and would double ours.
    var acceptsSignals: Bool {
        switch state {
        case .enabling(.start), .started: return true
        case .enabling(.acquire), .acquired, .riding, .ended: return false
        }
    }

    /// The socket the notifications come on, when acquired.
    var socket: SeqPacketSocket? {
        if case .acquired(let socket) = state { return socket }
        return nil
    }

    /// The socket's descriptor while acquired and open, for diagnostics and tests.
    var descriptor: Int32? {
        guard let socket, socket.isOpen else { return nil }
        return socket.descriptor
    }

    /// Takes `socket` over; an ended subscription closes it at once.
    func adopt(_ socket: SeqPacketSocket) {
        guard !isEnded else { return socket.close() }
        state = .acquired(socket)
    }

    func switchToStartNotify() {
        releaseSocket()
        if !isEnded { state = .enabling(.start) }
    }

    /// Rides another manager's socket.
    func ride() {
        if !isEnded { state = .riding }
    }

    /// Ends it without closing its socket, which is returned for its next owner.
    func handOverSocket() -> SeqPacketSocket? {
        let socket = self.socket
        retry = nil
        state = .ended
        return socket
    }

    func markStarted() {
        if !isEnded { state = .started }
    }

    /// Ends it; closes the socket (which releases AcquireNotify in bluetoothd).
    func end() {
        retry = nil
        releaseSocket()
        state = .ended
    }

    /// Closes the socket now. (Dropped without `end()`, the subscription needs no deinit for
    /// it: the socket it owns closes when released.)
    private func releaseSocket() {
        socket?.close()
    }
}
