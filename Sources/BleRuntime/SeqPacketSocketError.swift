/// Why a `SeqPacketSocket` could not be made or adopted.
package enum SeqPacketSocketError: Error, Equatable, CustomStringConvertible {
    /// `socketpair(AF_UNIX, SOCK_SEQPACKET)` failed with `errno` (out of descriptors, usually).
    case pairFailed(errno: Int32)
    /// The descriptor is not a socket at all (`getsockopt(SO_TYPE)` failed with `errno`: a
    /// pipe or a file gives ENOTSOCK, a closed descriptor EBADF).
    case notASocket(errno: Int32)
    /// The descriptor is a socket of another type (`SOCK_STREAM` = 1, `SOCK_DGRAM` = 2): it
    /// would merge or split records, and a reader would see values that were never sent.
    case notSeqPacket(type: Int32)

    /// What went wrong and what to do about it.
    package var description: String {
        switch self {
        case .pairFailed(let code):
            return "socketpair(AF_UNIX, SOCK_SEQPACKET) failed with errno \(code); the process may be out of file descriptors (ulimit -n)"
        case .notASocket(let code):
            return "the file descriptor is not a socket (errno \(code)); a SOCK_SEQPACKET socket was expected"
        case .notSeqPacket(let type):
            return "the file descriptor is a socket of type \(type), not SOCK_SEQPACKET; its records would not arrive whole"
        }
    }
}
