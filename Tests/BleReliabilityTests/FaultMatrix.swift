@testable import BleCore
import BleDBus
import BleSim
import Foundation

/// The faults of the matrix: what the radio, bluetoothd, the adapter and the peer do to a
/// BleKit client, each as BleSim reproduces it.
enum MatrixFault: String, CaseIterable, Sendable, CustomStringConvertible {
    case linkLoss
    case restartClean
    case restartKill
    case powerCycle
    case adapterRemoval
    case connectTransient
    case connectPermanent
    case neverReply
    case notificationsDropped
    case notificationsDuplicated
    case notificationsReordered
    case notificationBeforeReply
    case deviceExpiry
    case servicesChanged
    case accessDenied

    var description: String { rawValue }

    /// Faults that strike while the operation is in flight (held by a call BleSim does not
    /// answer yet); the others are armed before the operation starts.
    var strikesInFlight: Bool {
        switch self {
        case .linkLoss, .restartClean, .restartKill, .powerCycle, .adapterRemoval, .deviceExpiry, .servicesChanged: return true
        default: return false
        }
    }
}

/// The operations of the matrix, each started and then hit by every fault.
enum MatrixOperation: String, CaseIterable, Sendable, CustomStringConvertible {
    case scan
    case connect
    case discover
    case read
    case writeWithResponse
    case writeWithoutResponse
    case notify
    case dslCommand

    var description: String { rawValue }

    /// The BlueZ call that holds the operation in flight, when it makes one.
    var heldMember: String? {
        switch self {
        case .scan: return nil
        case .connect: return "Connect"
        case .discover: return nil
        case .read: return "ReadValue"
        case .writeWithResponse: return "WriteValue"
        case .writeWithoutResponse: return "AcquireWrite"
        case .notify: return "AcquireNotify"
        case .dslCommand: return nil
        }
    }
}

/// How one operation ended, reduced to what the matrix compares.
enum Outcome: String, Sendable, CustomStringConvertible {
    case success
    case disconnected
    case timeout
    case bluetoothRestarted
    case poweredOff
    case connectionFailed
    case connectionTimeout
    case deviceGone
    case accessDenied
    case peripheralNotConnected
    case attributeGone
    case dbus
    case otherError

    var description: String { rawValue }

    init(_ error: BleError?) {
        switch error {
        case nil: self = .success
        case .disconnected?: self = .disconnected
        case .timeout?: self = .timeout
        case .bluetoothRestarted?: self = .bluetoothRestarted
        case .poweredOff?: self = .poweredOff
        case .connectionFailed?, .connectionAttemptFailed?, .failed?: self = .connectionFailed
        case .connectionTimeout?: self = .connectionTimeout
        case .deviceGone?, .doesNotExist?: self = .deviceGone
        case .accessDenied?, .notAuthorized?, .notPermitted?: self = .accessDenied
        case .peripheralNotConnected?, .notConnected?: self = .peripheralNotConnected
        case .attributeGone?: self = .attributeGone
        case .dbus?, .noBus?, .serviceUnknown?: self = .dbus
        default: self = .otherError
        }
    }
}

/// One cell: an operation in flight when a fault strikes.
struct MatrixCell: Sendable, CustomStringConvertible {
    let fault: MatrixFault
    let operation: MatrixOperation
    var description: String { "\(fault) × \(operation)" }

    /// Every fault × every operation.
    static let all: [MatrixCell] = MatrixFault.allCases.flatMap { fault in
        MatrixOperation.allCases.map { MatrixCell(fault: fault, operation: $0) }
    }

    /// The endings the documentation allows for this cell (ThreadingModel.md, BleError's
    /// cases, RELIABILITY.md). Anything else — a hang, a second completion, another error —
    /// fails the cell.
    var allowed: Set<Outcome> {
        switch (fault, operation) {
        // Scanning is a state, not a request: a fault pauses it and the scan resumes (or
        // reports `didFailToScan`), so its first discovery either happens or the scan fails.
        case (.neverReply, .scan): return [.success, .timeout]
        case (.accessDenied, .scan): return [.accessDenied]
        case (_, .scan): return [.success]

        // Connect: transient failures are retried; permanent ones end with their reason.
        case (.connectTransient, .connect), (.linkLoss, .connect): return [.success]
        case (.connectPermanent, .connect): return [.connectionFailed]
        case (.neverReply, .connect): return [.connectionTimeout]
        case (.accessDenied, .connect): return [.accessDenied]
        case (.restartClean, .connect), (.restartKill, .connect):
            return [.bluetoothRestarted, .disconnected, .dbus, .connectionFailed]
        case (.powerCycle, .connect), (.adapterRemoval, .connect): return [.poweredOff, .disconnected, .connectionFailed, .deviceGone]
        // The held Connect ends at the connect deadline (BleKit then cancels it with Disconnect).
        case (.deviceExpiry, .connect): return [.deviceGone, .disconnected, .connectionFailed, .connectionTimeout]
        case (.servicesChanged, .connect): return [.success, .disconnected, .connectionTimeout]

        // Discovery answers from BlueZ's exported objects: it has ended before a fault can hit.
        case (_, .discover): return [.success]

        // The DSL command: the engine ends it with a typed error; with a reconnect policy the
        // session comes back and the next command works.
        case (.linkLoss, .dslCommand), (.restartClean, .dslCommand), (.restartKill, .dslCommand), (.powerCycle, .dslCommand),
             (.adapterRemoval, .dslCommand), (.deviceExpiry, .dslCommand), (.servicesChanged, .dslCommand):
            return [.disconnected, .otherError]
        case (.neverReply, .dslCommand): return [.timeout, .otherError]
        // The first answer is held back until a second one arrives: a lone command may time out.
        case (.notificationsReordered, .dslCommand): return [.success, .timeout]
        case (.accessDenied, .dslCommand): return [.accessDenied, .otherError]
        case (_, .dslCommand): return [.success]

        // GATT requests in flight.
        case (.linkLoss, _), (.servicesChanged, _): return [.disconnected]
        case (.restartClean, _): return [.disconnected, .bluetoothRestarted, .dbus]
        // SIGKILL: the held call's error reply comes from the bus before NameOwnerChanged.
        case (.restartKill, _): return [.disconnected, .bluetoothRestarted, .dbus, .otherError]
        case (.powerCycle, _), (.adapterRemoval, _): return [.disconnected, .poweredOff, .deviceGone]
        case (.deviceExpiry, _): return [.disconnected, .deviceGone]
        // Without AcquireWrite's answer BleKit paces command writes instead: the write goes out.
        case (.neverReply, .writeWithoutResponse): return [.timeout, .success]
        case (.neverReply, _): return [.timeout]
        case (.accessDenied, _): return [.accessDenied]
        // Faults that do not touch this operation's call: it succeeds.
        case (.connectTransient, _), (.connectPermanent, _), (.notificationsDropped, _), (.notificationsDuplicated, _),
             (.notificationsReordered, _), (.notificationBeforeReply, _):
            return [.success]
        }
    }
}
