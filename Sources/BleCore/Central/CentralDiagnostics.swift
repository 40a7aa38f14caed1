import BleDBus

/// What a `CentralManager` and its peripherals hold right now: the counts a leak or a lost
/// completion shows up in. After every operation has ended, and the links are down, the
/// per-operation counts are zero; the bus-level ones return to what they were at `poweredOn`
/// (the object cache's own subscriptions), and to zero after `close()`.
public struct CentralDiagnostics: Sendable, Equatable, CustomStringConvertible {
    /// GATT operations queued or running, connect attempts and service-discovery waits.
    public var pendingOperations: Int
    /// Characteristics with a live notification subscription (enabling or on).
    public var notifySubscriptions: Int
    /// Loop timers BleCore holds (operation, queue, connect, back-off and grace deadlines,
    /// the central's own retries, and the bus connection's call deadline timer). Running
    /// operations share one timer per peripheral; each counts while its deadline is ahead.
    public var timers: Int
    /// File descriptors BleCore holds (AcquireNotify and AcquireWrite sockets).
    public var fileDescriptors: Int
    /// The bus connection's view: calls awaiting replies, signal subscriptions, match rules.
    public var connection: ConnectionDiagnostics

    /// Creates a snapshot; BleKit fills it in (`CentralManager.diagnostics`).
    public init(pendingOperations: Int = 0, notifySubscriptions: Int = 0, timers: Int = 0, fileDescriptors: Int = 0,
                connection: ConnectionDiagnostics = ConnectionDiagnostics()) {
        self.pendingOperations = pendingOperations
        self.notifySubscriptions = notifySubscriptions
        self.timers = timers
        self.fileDescriptors = fileDescriptors
        self.connection = connection
    }

    /// True when nothing is in flight: no operation, subscription, socket, timer or call.
    public var isQuiescent: Bool {
        pendingOperations == 0 && notifySubscriptions == 0 && timers == 0 && fileDescriptors == 0
            && connection.pendingCalls == 0 && connection.timers == 0
    }

    /// One line, for test failures.
    public var description: String {
        "operations \(pendingOperations), notify subscriptions \(notifySubscriptions), timers \(timers), "
            + "fds \(fileDescriptors), bus: \(connection)"
    }
}

extension CentralManager {
    /// A snapshot of what this manager holds, taken on the loop (callable from any thread).
    public var diagnostics: CentralDiagnostics { LoopBridge.sync { self.currentDiagnostics } }

    @BleLoop var currentDiagnostics: CentralDiagnostics {
        var snapshot = CentralDiagnostics()
        // Peripherals of the session may include ones the central no longer lists.
        var seen = Set<ObjectIdentifier>()
        for peripheral in Array(peripheralsByAddress.values) + session.peripherals
        where seen.insert(ObjectIdentifier(peripheral)).inserted {
            peripheral.addDiagnostics(to: &snapshot)
        }
        snapshot.timers += adapterWatch.activeTimers
        if let connection = session.connection, connection.isOpen {
            snapshot.connection = connection.diagnostics
        }
        return snapshot
    }
}

extension Peripheral {
    @BleLoop func addDiagnostics(to snapshot: inout CentralDiagnostics) {
        snapshot.pendingOperations += operations.pendingCount + serviceWaits.count
        snapshot.timers += operations.liveTimerCount + deadlines.liveCount + serviceWaits.filter { $0.timer?.isActive == true }.count
        if let attempt, !attempt.finished {
            snapshot.pendingOperations += 1
        }
        if let attempt {
            snapshot.timers += [attempt.deadline, attempt.backoff, attempt.graceTimer].filter { $0?.isActive == true }.count
        }
        for characteristic in characteristicsByPath.values {
            if let subscription = characteristic.subscription, !subscription.isEnded {
                snapshot.notifySubscriptions += 1
                if subscription.descriptor != nil { snapshot.fileDescriptors += 1 }
            }
            if case .acquired = characteristic.writer.mode { snapshot.fileDescriptors += 1 }
        }
    }
}
