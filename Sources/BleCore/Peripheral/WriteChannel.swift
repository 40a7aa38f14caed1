import BleDBus
import Foundation

/// Write-without-response flow control for one characteristic.
struct WriteChannel {
    enum Mode {
        /// Nothing acquired.
        case idle
        /// AcquireWrite sent.
        case acquiring
        /// Writing packets to our end of bluetoothd's socket (which waits for room itself).
        case acquired(SeqPacketSocket)
        /// AcquireWrite is not available: one `WriteValue type=command` at a time.
        case commands
    }

    var mode: Mode = .idle
    /// Packets waiting for the socket to drain or the previous command to return.
    var backlog: [Data] = []
    /// A command write is awaiting its reply.
    var commandInFlight = false
    /// Gives up an `AcquireWrite` still in flight when the link's channel is torn down.
    var abandonAcquire: CallHandle?

    var isBusy: Bool { !backlog.isEmpty || commandInFlight }
}
