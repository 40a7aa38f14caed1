import CDBus
import CGLib

// The libdbus callbacks of every connection. They are file-level functions on purpose: a
// closure written inside `@BleLoop` code is isolated to the loop, and its C entry point then
// checks that isolation with the concurrency runtime on every call (several per message).

func connectionFilter(_ connection: OpaquePointer?, _ message: OpaquePointer?,
                              _ data: UnsafeMutableRawPointer?) -> DBusHandlerResult {
    guard let data else { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
    // libdbus calls filters on the thread that dispatches, the loop's: the message never
    // leaves it, whatever the checker cannot see through C.
    guard let rawMessage = message else { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
    nonisolated(unsafe) let unsafeMessage = rawMessage
    let box = Unmanaged<WeakConnection>.fromOpaque(data).takeUnretainedValue()
    return BleLoop.assumeIsolated {
        box.connection?.handleIncoming(unsafeMessage) ?? DBUS_HANDLER_RESULT_NOT_YET_HANDLED
    }
}

func connectionDispatchStatusChanged(_ connection: OpaquePointer?, _ status: DBusDispatchStatus,
                                             _ data: UnsafeMutableRawPointer?) {
    guard let data, status == DBUS_DISPATCH_DATA_REMAINS else { return }
    let box = Unmanaged<WeakConnection>.fromOpaque(data).takeUnretainedValue()
    // libdbus forbids dispatching from inside this callback: the connection defers it.
    if MainLoop.shared.isCurrent {
        BleLoop.assumeIsolated { box.connection?.incomingQueued() }
    } else {
        BleLoop.perform { box.connection?.scheduleDispatch() }
    }
}

func connectionWakeUpLoop(_ data: UnsafeMutableRawPointer?) {
    // libdbus asks for this on every send. On the loop thread (always, in BleKit) the loop is
    // not in poll() and looks at the watches again before it sleeps, so the eventfd write, and
    // the extra iteration it causes, would buy nothing.
    guard !MainLoop.shared.isCurrent else { return }
    g_main_context_wakeup(MainLoop.shared.context)
}

func connectionReleaseBox(_ data: UnsafeMutableRawPointer?) {
    guard let data else { return }
    Unmanaged<WeakConnection>.fromOpaque(data).release()
}

/// Lets C callbacks reach a connection without keeping it alive.
final class WeakConnection: @unchecked Sendable {
    // Only read on the loop thread, inside BleLoop.assumeIsolated.
    weak var connection: Connection?
    init(_ connection: Connection) { self.connection = connection }
}
