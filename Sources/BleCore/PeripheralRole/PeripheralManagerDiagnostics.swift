import BleDBus

/// What a `PeripheralManager` holds right now: the counts a lost answer or a leak shows up in.
/// Once every request was answered (by the app or by its deadline), every indication confirmed
/// or given up and every notification read by bluetoothd, the per-request counts are zero.
public struct PeripheralManagerDiagnostics: Sendable, Equatable, CustomStringConvertible {
    /// Read and write requests handed to the delegates and not answered yet.
    public var unansweredRequests: Int
    /// Notifications sent over the bus that bluetoothd has not certainly read yet.
    public var notificationsInFlight: Int
    /// Indications waiting for the central's confirmation.
    public var indicationsAwaitingConfirmation: Int
    /// Loop timers the manager holds (request and confirmation deadlines, the wait for
    /// bluetoothd's return).
    public var timers: Int
    /// File descriptors it holds (the sockets handed out by `AcquireNotify`/`AcquireWrite`).
    public var fileDescriptors: Int
    /// The bus connection's view: calls awaiting replies, signal subscriptions, match rules.
    public var connection: ConnectionDiagnostics
    /// Writes through `AcquireWrite` sockets that were longer than the MTU and so were
    /// discarded (each also reported to `didDiscardWriteTo`), since the manager started.
    public var discardedWrites = 0

    /// Creates a snapshot; BleKit fills it in (`PeripheralManager.diagnostics`).
    public init(unansweredRequests: Int = 0, notificationsInFlight: Int = 0, indicationsAwaitingConfirmation: Int = 0,
                timers: Int = 0, fileDescriptors: Int = 0, connection: ConnectionDiagnostics = ConnectionDiagnostics()) {
        self.unansweredRequests = unansweredRequests
        self.notificationsInFlight = notificationsInFlight
        self.indicationsAwaitingConfirmation = indicationsAwaitingConfirmation
        self.timers = timers
        self.fileDescriptors = fileDescriptors
        self.connection = connection
    }

    /// True when nothing is in flight: no request, notification, indication, timer or call.
    public var isQuiescent: Bool {
        unansweredRequests == 0 && notificationsInFlight == 0 && indicationsAwaitingConfirmation == 0 && timers == 0
            && connection.pendingCalls == 0
    }

    /// One line, for test failures.
    public var description: String {
        "requests \(unansweredRequests), notifications in flight \(notificationsInFlight), "
            + "indications \(indicationsAwaitingConfirmation), timers \(timers), fds \(fileDescriptors), "
            + "discarded writes \(discardedWrites), bus: \(connection)"
    }
}

extension PeripheralManager {
    /// A snapshot of what this manager holds, taken on the loop (callable from any thread).
    public var diagnostics: PeripheralManagerDiagnostics { LoopBridge.sync { self.currentDiagnostics } }

    @BleLoop var currentDiagnostics: PeripheralManagerDiagnostics {
        var snapshot = PeripheralManagerDiagnostics()
        snapshot.unansweredRequests = unansweredRequestCount
        snapshot.discardedWrites = discardedWrites
        snapshot.notificationsInFlight = flow.outstanding
        // Each unanswered request holds its deadline timer.
        snapshot.timers = unansweredRequestCount + adapterWatch.activeTimers
        for service in services {
            for record in service.characteristics {
                if record.awaitingConfirmation { snapshot.indicationsAwaitingConfirmation += 1 }
                if record.confirmationDeadline?.isActive == true { snapshot.timers += 1 }
                snapshot.fileDescriptors += [record.notifySocket, record.writeSocket].compactMap { $0 }.count
            }
        }
        if let connection = session.connection, connection.isOpen {
            snapshot.connection = connection.diagnostics
        }
        return snapshot
    }
}
