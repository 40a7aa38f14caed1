import CGLib
import Synchronization

/// Calls a handler on the shared loop whenever a file descriptor becomes readable or hangs up:
/// how `AcquireNotify`/`AcquireWrite` sockets are served without a thread of their own.
///
/// The watch does not own the descriptor; cancel it before closing the descriptor.
public final class FileDescriptorWatch: Sendable {
    /// What happened on the descriptor.
    public struct Events: OptionSet, Sendable {
        /// The raw GLib condition bits.
        public let rawValue: UInt32
        /// Creates events from GLib condition bits.
        public init(rawValue: UInt32) { self.rawValue = rawValue }
        /// Data (or EOF) can be read.
        public static let readable = Events(rawValue: G_IO_IN.rawValue)
        /// The peer closed its end.
        public static let hangUp = Events(rawValue: G_IO_HUP.rawValue)
        /// The descriptor is in an error state (`G_IO_ERR`); always watched, so a broken descriptor is reported, not left silent.
        public static let error = Events(rawValue: G_IO_ERR.rawValue)
        /// The descriptor can take more data (watched only when asked for: an `AcquireWrite`
        /// socket that returned EAGAIN waits for this).
        public static let writable = Events(rawValue: G_IO_OUT.rawValue)
    }

    private let source: Mutex<UInt>

    /// Starts watching `descriptor` for `events` (readability by default; hang-up and errors
    /// are always reported).
    public init(descriptor: Int32, events: Events = .readable, handler: @escaping @BleLoop @Sendable (Events) -> Void) {
        let condition = GIOCondition(events.rawValue | G_IO_HUP.rawValue | G_IO_ERR.rawValue)
        source = Mutex(0)
        guard let created = g_unix_fd_source_new(descriptor, condition) else { return }
        let box = Unmanaged.passRetained(WatchHandler(handler)).toOpaque()
        let callback: GUnixFDSourceFunc = { _, condition, data in
            guard let data else { return 0 }
            let handler = Unmanaged<WatchHandler>.fromOpaque(data).takeUnretainedValue()
            let events = Events(rawValue: condition.rawValue)
            BleLoop.assumeIsolated { handler.handler(events) }
            return 1
        }
        g_source_set_callback(created, unsafeBitCast(callback, to: GSourceFunc.self), box, { data in
            guard let data else { return }
            Unmanaged<WatchHandler>.fromOpaque(data).release()
        })
        // As for D-Bus watches (LoopIntegration): GLib blocks a non-recursive source around each
        // dispatch by removing and re-adding its descriptor, and each of those writes the
        // context's wake-up eventfd (two writes and a read per notification on an AcquireNotify
        // socket). Nothing iterates this context from inside a callback.
        g_source_set_can_recurse(created, 1)
        let address = UInt(bitPattern: created)
        source.withLock { $0 = address }
        g_source_attach(created, MainLoop.shared.context)
        MainLoop.shared.perform {}
    }

    /// Stops the watch; the handler does not run again once this returns on the loop thread.
    public func cancel() {
        let address = source.withLock { current -> UInt in
            let taken = current
            current = 0
            return taken
        }
        guard let pointer = UnsafeMutablePointer<GSource>(bitPattern: address) else { return }
        g_source_destroy(pointer)
        g_source_unref(pointer)
    }

    deinit { cancel() }
}

private final class WatchHandler: Sendable {
    let handler: @BleLoop @Sendable (FileDescriptorWatch.Events) -> Void
    init(_ handler: @escaping @BleLoop @Sendable (FileDescriptorWatch.Events) -> Void) { self.handler = handler }
}
