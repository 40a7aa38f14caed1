/// `blekit`'s exit statuses: scripts may rely on them (they are listed in `blekit --help`).
enum ExitCode: Int32, CaseIterable {
    /// Everything asked for was done.
    case success = 0
    /// A step failed (a read, a write, a connection, a scenario): the message says which.
    case failure = 1
    /// The command line is wrong: unknown command or option, missing or malformed argument.
    case usage = 2
    /// No Bluetooth here: no adapter, bluetoothd not running, or no D-Bus system bus.
    case unavailable = 3
    /// The adapter exists but is powered off or rfkill-blocked.
    case poweredOff = 4
    /// The D-Bus policy refuses this user access to bluetoothd.
    case permissionDenied = 5
    /// The device was not found within the timeout, or went away.
    case deviceNotFound = 6
    /// Nothing answered before the deadline.
    case timeout = 7

    /// The line `blekit --help` shows for this status.
    var meaning: String {
        switch self {
        case .success: return "success"
        case .failure: return "a step failed (the message says which)"
        case .usage: return "bad command line"
        case .unavailable: return "no adapter, bluetoothd not running, or no system bus"
        case .poweredOff: return "the adapter is powered off or rfkill-blocked"
        case .permissionDenied: return "the D-Bus policy refuses access to bluetoothd"
        case .deviceNotFound: return "the device was not found or went away"
        case .timeout: return "no answer before the deadline"
        }
    }
}
