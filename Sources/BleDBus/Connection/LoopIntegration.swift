import CDBus
import CGLib

/// Attaches a libdbus connection to a GLib main context through libdbus's watch and timeout
/// callbacks: the socket is polled by GLib with the rest of the loop, never by a thread of
/// libdbus's own and never by a blocking read.
final class LoopIntegration {
    private let connection: OpaquePointer
    private let context: OpaquePointer
    /// Runs after libdbus read from the socket, so queued messages get dispatched.
    let onIncomingData: () -> Void
    /// True while a watch or timeout is handled, up to and including `onIncomingData`: messages
    /// queued meanwhile are dispatched before it ends, without a dispatch of their own.
    private(set) var isHandling = false

    init(connection: OpaquePointer, context: OpaquePointer, onIncomingData: @escaping () -> Void) {
        self.connection = connection
        self.context = context
        self.onIncomingData = onIncomingData
    }

    /// Installs the callbacks. The integration object must outlive the connection's watches;
    /// `detach()` removes them again.
    func attach() {
        let me = Unmanaged.passUnretained(self).toOpaque()
        dbus_connection_set_watch_functions(connection, { watch, data in
            guard let watch, let data else { return 0 }
            Unmanaged<LoopIntegration>.fromOpaque(data).takeUnretainedValue().addWatch(watch)
            return 1
        }, { watch, _ in
            guard let watch else { return }
            LoopIntegration.removeWatch(watch)
        }, { watch, _ in
            guard let watch else { return }
            LoopIntegration.watchToggled(watch)
        }, me, nil)
        dbus_connection_set_timeout_functions(connection, { timeout, data in
            guard let timeout, let data else { return 0 }
            Unmanaged<LoopIntegration>.fromOpaque(data).takeUnretainedValue().addTimeout(timeout)
            return 1
        }, { timeout, _ in
            guard let timeout else { return }
            LoopIntegration.removeTimeout(timeout)
        }, { timeout, _ in
            guard let timeout else { return }
            LoopIntegration.timeoutToggled(timeout)
        }, me, nil)
    }

    /// Removes every source; libdbus calls the remove functions for each watch and timeout.
    func detach() {
        dbus_connection_set_watch_functions(connection, nil, nil, nil, nil, nil)
        dbus_connection_set_timeout_functions(connection, nil, nil, nil, nil, nil)
    }

    /// Runs `body` (a libdbus handle call), then `onIncomingData`, with `isHandling` set.
    private func handling(_ body: () -> Void) {
        let wasHandling = isHandling
        isHandling = true
        defer { isHandling = wasHandling }
        body()
        onIncomingData()
    }

    // MARK: Watches

    private final class WatchSource {
        let watch: OpaquePointer
        let integration: LoopIntegration
        var source: UnsafeMutablePointer<GSource>?

        init(watch: OpaquePointer, integration: LoopIntegration) {
            self.watch = watch
            self.integration = integration
        }

        func attach() {
            guard source == nil, dbus_watch_get_enabled(watch) != 0 else { return }
            let flags = dbus_watch_get_flags(watch)
            DBusLog.debug("attach watch fd=\(dbus_watch_get_unix_fd(watch)) flags=\(flags)")
            var condition = G_IO_HUP.rawValue | G_IO_ERR.rawValue
            if flags & DBUS_WATCH_READABLE.rawValue != 0 { condition |= G_IO_IN.rawValue }
            if flags & DBUS_WATCH_WRITABLE.rawValue != 0 { condition |= G_IO_OUT.rawValue }
            guard let created = g_unix_fd_source_new(dbus_watch_get_unix_fd(watch), GIOCondition(condition)) else { return }
            let callback: GUnixFDSourceFunc = { _, condition, data in
                guard let data else { return 0 }
                let watchSource = Unmanaged<WatchSource>.fromOpaque(data).takeUnretainedValue()
                var flags: UInt32 = 0
                if condition.rawValue & G_IO_IN.rawValue != 0 { flags |= DBUS_WATCH_READABLE.rawValue }
                if condition.rawValue & G_IO_OUT.rawValue != 0 { flags |= DBUS_WATCH_WRITABLE.rawValue }
                if condition.rawValue & G_IO_HUP.rawValue != 0 { flags |= DBUS_WATCH_HANGUP.rawValue }
                if condition.rawValue & G_IO_ERR.rawValue != 0 { flags |= DBUS_WATCH_ERROR.rawValue }
                // Handling may remove this very watch; keep the object alive until we return.
                let integration = watchSource.integration
                integration.handling {
                    withExtendedLifetime(watchSource) {
                        _ = dbus_watch_handle(watchSource.watch, flags)
                    }
                }
                return 1
            }
            g_source_set_callback(created, unsafeBitCast(callback, to: GSourceFunc.self),
                                  Unmanaged.passUnretained(self).toOpaque(), nil)
            // GLib blocks a non-recursive source around each dispatch by removing and re-adding
            // its descriptor, and each of those writes the context's wake-up eventfd: two
            // syscalls and a spurious loop iteration per received message. Nothing iterates
            // this context from inside a callback, so there is no recursion to guard against.
            g_source_set_can_recurse(created, 1)
            g_source_attach(created, integration.context)
            source = created
        }

        func detach() {
            guard let source else { return }
            g_source_destroy(source)
            g_source_unref(source)
            self.source = nil
        }
    }

    private func addWatch(_ watch: OpaquePointer) {
        let watchSource = WatchSource(watch: watch, integration: self)
        dbus_watch_set_data(watch, Unmanaged.passRetained(watchSource).toOpaque(), { data in
            guard let data else { return }
            let watchSource = Unmanaged<WatchSource>.fromOpaque(data).takeRetainedValue()
            watchSource.detach()
        })
        watchSource.attach()
    }

    private static func removeWatch(_ watch: OpaquePointer) {
        // Replacing the data runs the free function above, which detaches the source.
        dbus_watch_set_data(watch, nil, nil)
    }

    private static func watchToggled(_ watch: OpaquePointer) {
        guard let data = dbus_watch_get_data(watch) else { return }
        let watchSource = Unmanaged<WatchSource>.fromOpaque(data).takeUnretainedValue()
        watchSource.detach()
        watchSource.attach()
    }

    // MARK: Timeouts

    private final class TimeoutSource {
        let timeout: OpaquePointer
        let integration: LoopIntegration
        var source: UnsafeMutablePointer<GSource>?

        init(timeout: OpaquePointer, integration: LoopIntegration) {
            self.timeout = timeout
            self.integration = integration
        }

        func attach() {
            guard source == nil, dbus_timeout_get_enabled(timeout) != 0 else { return }
            guard let created = g_timeout_source_new(UInt32(max(0, dbus_timeout_get_interval(timeout)))) else { return }
            g_source_set_callback(created, { data in
                guard let data else { return 0 }
                let timeoutSource = Unmanaged<TimeoutSource>.fromOpaque(data).takeUnretainedValue()
                let integration = timeoutSource.integration
                integration.handling {
                    withExtendedLifetime(timeoutSource) {
                        _ = dbus_timeout_handle(timeoutSource.timeout)
                    }
                }
                return 1
            }, Unmanaged.passUnretained(self).toOpaque(), nil)
            g_source_attach(created, integration.context)
            source = created
        }

        func detach() {
            guard let source else { return }
            g_source_destroy(source)
            g_source_unref(source)
            self.source = nil
        }
    }

    private func addTimeout(_ timeout: OpaquePointer) {
        let timeoutSource = TimeoutSource(timeout: timeout, integration: self)
        dbus_timeout_set_data(timeout, Unmanaged.passRetained(timeoutSource).toOpaque(), { data in
            guard let data else { return }
            Unmanaged<TimeoutSource>.fromOpaque(data).takeRetainedValue().detach()
        })
        timeoutSource.attach()
    }

    private static func removeTimeout(_ timeout: OpaquePointer) {
        dbus_timeout_set_data(timeout, nil, nil)
    }

    private static func timeoutToggled(_ timeout: OpaquePointer) {
        guard let data = dbus_timeout_get_data(timeout) else { return }
        let timeoutSource = Unmanaged<TimeoutSource>.fromOpaque(data).takeUnretainedValue()
        timeoutSource.detach()
        timeoutSource.attach()
    }
}
