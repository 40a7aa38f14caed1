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
    /// The process at the other end of a link between two roles on this machine exits without
    /// cleaning up (its bus connection drops): the serving app for the central's requests, the
    /// central for the requests an app serves, the agent's process for a pairing.
    case peerExit

    var description: String { rawValue }

    /// Faults that strike while the operation is in flight (held by a call BleSim does not
    /// answer yet); the others are armed before the operation starts.
    var strikesInFlight: Bool {
        switch self {
        case .linkLoss, .restartClean, .restartKill, .powerCycle, .adapterRemoval, .deviceExpiry, .servicesChanged, .peerExit: return true
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
    /// BleAsync: an `async` read in flight (the async `connect` for the connect faults).
    case asyncCall
    /// The peripheral role: a read request a `PeripheralManager` is serving (not answered yet)
    /// for a central on the other adapter.
    case servedRead
    /// The peripheral role: a write request being served.
    case servedWrite
    /// The peripheral role: a notification `updateValue` sent that bluetoothd has not read yet.
    case servedNotify
    /// `Peripheral.pair()` waiting on the agent's question (numeric comparison).
    case pairing

    var description: String { rawValue }

    /// The peripheral-role columns: the subject is a `PeripheralManager`, the peer a central.
    var isServed: Bool { [.servedRead, .servedWrite, .servedNotify].contains(self) }

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
        case .asyncCall: return "ReadValue"
        case .servedRead, .servedWrite, .servedNotify: return nil
        case .pairing: return "Pair"
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
    case attError
    case authenticationFailed
    case authenticationCanceled
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
        case .att?: self = .attError
        case .authenticationFailed?, .authenticationRejected?: self = .authenticationFailed
        case .authenticationCanceled?, .cancelled?: self = .authenticationCanceled
        case .authenticationTimeout?: self = .timeout
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

    /// The cells that run (the others cannot happen; `notApplicable` says why).
    static let runnable: [MatrixCell] = all.filter { $0.notApplicable == nil }

    /// The runnable cells whose "fault × operation" contains one of the `|`-separated texts of
    /// `BLEKIT_MATRIX_CELLS` (all of them when it is unset): a row or column while working on it.
    static let selected: [MatrixCell] = {
        guard let filter = ProcessInfo.processInfo.environment["BLEKIT_MATRIX_CELLS"], !filter.isEmpty else { return runnable }
        let alternatives = filter.split(separator: "|").map(String.init)
        return runnable.filter { cell in alternatives.contains { cell.description.contains($0) } }
    }()

    /// Why a fault cannot strike this operation, for the cells that make no sense
    /// (RELIABILITY.md lists them with these reasons); nil for the cells that run.
    var notApplicable: String? {
        let notificationFaults: [MatrixFault] = [.notificationsDropped, .notificationsDuplicated, .notificationsReordered, .notificationBeforeReply]
        if notificationFaults.contains(fault) {
            switch operation {
            case .pairing: return "a pairing carries no notification (SMP runs below GATT)"
            case .servedRead, .servedWrite: return "a served read or write carries no notification"
            case .servedNotify:
                return "what the air does to a notification after bluetoothd took it concerns the receiving central (the notify column); the app only sees bluetoothd's queue"
            default: break
            }
        }
        if fault == .neverReply, operation == .servedNotify {
            return "a notification is a signal the app emits; the one call on its way, the flow-control Ping, is answered by libdbus inside bluetoothd's process and cannot hang while bluetoothd lives (when it dies the bus answers it: the restartKill row)"
        }
        if fault == .deviceExpiry, operation.isServed {
            return "bluetoothd does not expire the device object of a connected central; once the link is gone it is the link-loss row"
        }
        guard fault == .peerExit else { return nil }
        switch operation {
        case .scan: return "an app's exit only ends its advertisement: a scan in flight stops seeing it, and BlueZ keeps the device until it expires (the deviceExpiry row)"
        case .connect: return "the link is made between the adapters; the serving app's process plays no part in it (bluetoothd serves its own services throughout)"
        case .discover: return "discovery is answered from BlueZ's objects; the app's exit changes them as the servicesChanged row does"
        case .writeWithoutResponse: return "a write command has no answer for an exited app to withhold; bluetoothd drops it (as ATT does)"
        case .notify: return "enabling notifications is answered by bluetoothd, which owns the CCCD; the app's exit then ends them as a services change does"
        case .dslCommand: return "a DSL command is a write and a notification: covered by writeWithResponse × peerExit and the served columns"
        case .asyncCall: return "BleAsync's read is BleCore's read with one continuation: covered by read × peerExit; this column shows the continuation ends once for every other ending"
        default: return nil
        }
    }

    /// The endings the documentation allows for this cell (ThreadingModel.md, BleError's
    /// cases, RELIABILITY.md). Anything else — a hang, a second completion, another error —
    /// fails the cell.
    var allowed: Set<Outcome> {
        switch (fault, operation) {
        // The served columns: what the central's request (or the notification) ended with.
        case (_, .servedRead), (_, .servedWrite), (_, .servedNotify): return servedAllowed
        case (_, .pairing): return pairingAllowed
        // The async connect, for the connect faults.
        case (.connectPermanent, .asyncCall): return [.connectionFailed]
        // The app holding the request exits: bluetoothd takes its services out of the database
        // and tells the central, whose request ends on the gone attribute (or an ATT error).
        case (.peerExit, _): return [.attributeGone, .attError]

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

    private var servedAllowed: Set<Outcome> {
        switch fault {
        // The link, the daemon or the serving adapter went while the app held the request.
        case .linkLoss, .powerCycle, .adapterRemoval: return [.disconnected]
        case .restartClean: return [.disconnected, .bluetoothRestarted, .dbus]
        case .restartKill: return [.disconnected, .bluetoothRestarted, .dbus, .otherError]
        // The app never answers: its request deadline answers Unlikely Error (0x0e).
        case .neverReply: return [.attError]
        // The app replaced its services with the request open: the central's handle is gone or
        // the late answer still arrives.
        // A notification of the removed service is dropped and the central told its services
        // changed (`didModifyServices`).
        case .servicesChanged: return [.success, .attError, .attributeGone, .disconnected]
        // A notification is a signal the app emits, which no bus policy on calls to org.bluez
        // stops; a request is a call to bluetoothd, which the policy refuses.
        case .accessDenied: return operation == .servedNotify ? [.success] : [.accessDenied]
        // The central's process exited: its own calls end with the bus gone.
        case .peerExit: return [.dbus, .disconnected, .success]
        default: return [.success]
        }
    }

    private var pairingAllowed: Set<Outcome> {
        switch fault {
        case .linkLoss, .servicesChanged, .deviceExpiry, .powerCycle, .adapterRemoval:
            return [.disconnected, .authenticationCanceled, .authenticationFailed, .deviceGone, .poweredOff]
        // bluetoothd stopping ends the pairing it runs (AuthenticationFailed) before it leaves;
        // killed, it leaves the Pair call to the bus, which answers it at once.
        case .restartClean: return [.disconnected, .bluetoothRestarted, .dbus, .authenticationCanceled, .authenticationFailed]
        case .restartKill: return [.disconnected, .bluetoothRestarted, .dbus, .authenticationCanceled]
        case .neverReply: return [.timeout]
        case .accessDenied: return [.accessDenied]
        // The agent's process exited with the question open: bluetoothd fails the pairing.
        case .peerExit: return [.authenticationFailed, .authenticationCanceled]
        default: return [.success]
        }
    }
}
