import BleCore
import Foundation

/// What `blekit serve`'s peripheral manager heard.
enum PeripheralEvent: @unchecked Sendable {
    // @unchecked: requests, centrals and characteristics are BleKit's any-thread facades.
    case state(ManagerState)
    case added(Service, Error?)
    case advertising(Error?)
    case read(ATTRequest)
    case write([ATTRequest])
    case subscribed(Central, Characteristic)
    case unsubscribed(Central, Characteristic)
    case connected(Central)
    case disconnected(Central)
    case tick(Int)
    /// `--agent`: registered (nil) or refused; later, a request bluetoothd cancelled.
    case agentRegistered(Error?)
    case agentCanceled(String?)
    case interrupted
}

// @unchecked: it only forwards into the queue, which is thread-safe.
/// The delegate of `blekit serve`'s manager: every callback becomes a `PeripheralEvent`.
final class PeripheralEventRelay: PeripheralManagerDelegate, @unchecked Sendable {
    let post: @Sendable (PeripheralEvent) -> Void

    init(post: @escaping @Sendable (PeripheralEvent) -> Void) { self.post = post }

    func peripheralManagerDidUpdateState(_ peripheral: PeripheralManager) { post(.state(peripheral.state)) }
    func peripheralManager(_ peripheral: PeripheralManager, didAdd service: Service, error: Error?) { post(.added(service, error)) }
    func peripheralManagerDidStartAdvertising(_ peripheral: PeripheralManager, error: Error?) { post(.advertising(error)) }
    func peripheralManager(_ peripheral: PeripheralManager, didReceiveRead request: ATTRequest) { post(.read(request)) }
    func peripheralManager(_ peripheral: PeripheralManager, didReceiveWrite requests: [ATTRequest]) { post(.write(requests)) }
    func peripheralManager(_ peripheral: PeripheralManager, central: Central, didSubscribeTo characteristic: Characteristic) {
        post(.subscribed(central, characteristic))
    }
    func peripheralManager(_ peripheral: PeripheralManager, central: Central, didUnsubscribeFrom characteristic: Characteristic) {
        post(.unsubscribed(central, characteristic))
    }
    func peripheralManager(_ peripheral: PeripheralManager, centralDidConnect central: Central) { post(.connected(central)) }
    func peripheralManager(_ peripheral: PeripheralManager, centralDidDisconnect central: Central) { post(.disconnected(central)) }
}
