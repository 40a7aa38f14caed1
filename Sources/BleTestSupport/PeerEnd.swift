import Foundation
import Glibc

/// The far end of a socket or pipe a test holds, to see from outside whether the near end was
/// really closed: the check that holds however descriptor numbers are reused meanwhile (a
/// closed number may already name another test's descriptor; a hang-up cannot be faked).
public enum PeerEnd {
    /// Waits, at most `timeout` at the tests' clock, until `descriptor`'s other end is closed:
    /// `poll` reports the hang-up and a read returns end of file (or ECONNRESET: a socket
    /// closed with datagrams unread in it resets its peer). False when data came instead or
    /// the deadline passed. Blocks its thread while it waits: call it off the loop (a
    /// nonisolated async function runs on the global executor), since the close it waits for
    /// may need the loop.
    public static func hungUp(_ descriptor: Int32, within timeout: Duration = .seconds(10)) async -> Bool {
        var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        let milliseconds = Int32(min(Double(Int32.max), TestTime.scaled(timeout) / .milliseconds(1)))
        guard poll(&entry, 1, milliseconds) == 1, entry.revents & Int16(POLLHUP) != 0 else { return false }
        var byte: UInt8 = 0
        let count = read(descriptor, &byte, 1)
        return count == 0 || (count < 0 && errno == ECONNRESET)
    }

    /// True when nothing is waiting to be read on `descriptor` and its other end is open (a
    /// datagram that was never sent is not there).
    public static func isQuiet(_ descriptor: Int32) -> Bool {
        var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, 0) == 0
    }
}
