import BleDBus
import Foundation

/// The value a callback reports, bound to the callback while it runs.
///
/// CoreBluetooth's `didUpdateValueFor` carries no value: apps read `characteristic.value`
/// inside it. With callbacks on a queue, the loop has moved on by then (20 notifications read
/// as `[20, 20, …]`). BleKit binds each callback's own value to it (a task-local, which also
/// works on plain dispatch queues), and `value` answers that while the callback runs.
struct DeliveredValue: Sendable {
    /// The characteristic or descriptor the value belongs to.
    let attribute: ObjectIdentifier
    /// The bytes the callback reports (nil for a failed read).
    let value: Data?

    @TaskLocal static var current: DeliveredValue?

    /// The delivered value for `attribute`, when a callback for it is running on this thread.
    static func value(for attribute: AnyObject) -> Data?? {
        // On the loop thread none is ever set (callbacks that carry one run on the app's queue):
        // no task-local lookup there, in the notification handlers that read values.
        guard !MainLoop.shared.isCurrent, let current, current.attribute == ObjectIdentifier(attribute) else { return nil }
        return .some(current.value)
    }
}
