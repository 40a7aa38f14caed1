import BleDBus
import Foundation

/// One change to BlueZ's object tree, as the cache saw it.
enum CacheEvent {
    /// Interfaces appeared on an object (with their properties, now in the cache).
    case added(ObjectPath, interfaces: Set<String>)
    /// Interfaces left an object (removed from the cache; the last ones remove the object).
    case removed(ObjectPath, interfaces: Set<String>, lastProperties: InterfaceMap)
    /// Properties changed (already applied) or were invalidated (already removed).
    case changed(ObjectPath, interface: String, changed: PropertyMap, invalidated: [String])
    /// A characteristic's `Value` changed, alone: a notification (or a read's announcement),
    /// with its bytes.
    case notified(ObjectPath, Data)
    /// bluetoothd left the bus: every object is gone.
    case daemonLost
    /// A fresh `GetManagedObjects` answer was loaded (after start or a daemon restart).
    case loaded
    /// Loading failed (e.g. AccessDenied).
    case loadFailed(BleError)
}
