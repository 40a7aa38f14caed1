import BleDBus
import Foundation

/// One advertisement registered with bluetoothd: a handle. Releasing it (or `cancel()`)
/// unregisters the advertisement; after a bluetoothd restart it is registered again by itself.
public final class AdvertisementRegistration: Sendable, CustomStringConvertible {
    /// Where the registration is.
    public enum State: Sendable, Equatable {
        /// Sent to bluetoothd, or waiting for it (adapter off, daemon away).
        case registering
        /// Registered: on the air as far as the controller's rotation allows.
        case active
        /// bluetoothd refused it (too long, no free instance, …).
        case failed(BleError)
        /// bluetoothd ended it (its `Timeout` elapsed, or it is stopping) with `Release`.
        case released
        /// Cancelled by the app.
        case cancelled
    }

    /// What it advertises.
    public let advertisement: Advertisement
    /// The exported `LEAdvertisement1` object's path.
    public let path: String
    private let current = Locked<State>(.registering)
    weak let manager: PeripheralManager?

    init(advertisement: Advertisement, path: String, manager: PeripheralManager) {
        self.advertisement = advertisement
        self.path = path
        self.manager = manager
    }

    /// The registration's state now.
    public var state: State { current.value }
    /// True while registered.
    public var isActive: Bool { current.value == .active }

    func setState(_ state: State) { current.value = state }

    /// Unregisters now (releasing the handle does the same).
    public func cancel() {
        let path = self.path
        guard let manager else { return }
        LoopBridge.async { manager.endAdvertisement(path: path, cancelled: true) }
    }

    deinit {
        let path = self.path
        if let manager { LoopBridge.async { manager.endAdvertisement(path: path, cancelled: true) } }
    }

    /// `Advertisement(<path>, <state>)`.
    public var description: String { "Advertisement(\(path), \(state))" }
}
