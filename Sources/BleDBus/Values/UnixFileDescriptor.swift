import Glibc
import Synchronization

/// A Unix file descriptor that travels in a D-Bus message, owned by this value.
///
/// The descriptor is closed when the last reference goes away, unless `take()` handed its
/// ownership to the caller first. That is how a received `AcquireWrite`/`AcquireNotify` socket
/// can never leak: whoever does not take it lets it close.
public final class UnixFileDescriptor: Hashable, Sendable, CustomStringConvertible {
    private let state: Mutex<Int32>

    /// Adopts `descriptor`: this object closes it unless `take()` is called.
    public init(adopting descriptor: Int32) {
        state = Mutex(descriptor)
    }

    /// Duplicates `descriptor`; the caller keeps the original.
    public convenience init(duplicating descriptor: Int32) throws(DBusError) {
        let copy = fcntl(descriptor, F_DUPFD_CLOEXEC, 0)
        guard copy >= 0 else {
            throw .invalidArgument("cannot duplicate file descriptor \(descriptor): errno \(errno)")
        }
        self.init(adopting: copy)
    }

    /// The descriptor number while this object still owns it, or -1 after `take()`/`close()`.
    public var rawValue: Int32 { state.withLock { $0 } }

    /// Hands the descriptor to the caller, who must close it. Returns nil if already taken.
    public func take() -> Int32? {
        state.withLock { descriptor in
            guard descriptor >= 0 else { return nil }
            let taken = descriptor
            descriptor = -1
            return taken
        }
    }

    /// Closes the descriptor now instead of at deinit.
    public func close() {
        if let descriptor = take() { _ = Glibc.close(descriptor) }
    }

    deinit {
        let descriptor = state.withLock { $0 }
        if descriptor >= 0 { _ = Glibc.close(descriptor) }
    }

    /// Identity: two values are equal when they are the same owner object.
    public static func == (lhs: UnixFileDescriptor, rhs: UnixFileDescriptor) -> Bool { lhs === rhs }

    /// Hashes the object identity.
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }

    /// `fd N`.
    public var description: String { "fd \(rawValue)" }
}
