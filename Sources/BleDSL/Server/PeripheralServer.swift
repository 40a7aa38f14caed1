import BleRuntime
import Foundation

/// The server side of the command DSL: declare a service, where commands arrive, where
/// responses go and which commands are answered how; `PeripheralServer` adds the service,
/// advertises once it is registered, answers each write, gathers multi-packet requests per
/// central, splits each response by the central's MTU and notifies it with flow control (it
/// waits for `peripheralManagerIsReady` whenever the queue is full).
///
/// ```swift
/// let server = PeripheralServer()
/// server.execute(commandItems: [
///     .service(ledService), .commandCharacteristic(ledControl), .responseCharacteristic(ledStatus),
///     .commands([ServerCommand(opcode: 0x01) { request, _ in Data([0x01, request.last ?? 0]) }]),
///     .advertise(Advertisement(localName: "LED", serviceUUIDs: [ledService])),
/// ])
/// ```
///
/// Events and handlers run on BleKit's loop thread, in order.
public final class PeripheralServer: PeripheralManagerDelegate, Sendable {
    /// What the server reports.
    public enum Event {
        /// bluetoothd has the service.
        case serving
        /// The advertisement is registered.
        case advertising
        /// Adding the service or advertising failed; the server does not retry.
        case failed(Error)
        /// A central connected.
        case centralConnected(Central)
        /// A central disconnected.
        case centralDisconnected(Central)
    }

    /// The peripheral manager serving the declaration.
    public let manager: PeripheralManager
    /// Hears the server's events.
    public var onEvent: ((Event) -> Void)? {
        get { handler.value }
        set { handler.value = newValue }
    }
    private let handler = LoopLock<((Event) -> Void)?>(nil)
    private let engine: ServerEngine

    /// A server with its own `PeripheralManager` (delivering on the loop).
    public convenience init(options: PeripheralManagerOptions = PeripheralManagerOptions()) {
        self.init(manager: PeripheralManager(delegate: nil, queue: nil, options: options))
    }

    /// A server on `manager`, which must deliver its events on the loop (`queue: nil`); the
    /// server listens through its `multiDelegate`, beside the app's own delegate.
    public init(manager: PeripheralManager) {
        self.manager = manager
        engine = ServerEngine(manager: manager)
        manager.multiDelegate.addDelegate(self)
    }

    /// Serves `commandItems` (one declaration per server).
    public func execute(commandItems: [PeripheralServerItem]) {
        let items = LoopBound(commandItems)
        LoopBridge.async { [engine] in
            // The engine keeps `report` while it serves, and the server keeps the engine: a
            // strong capture kept both, the manager and its bus connection alive for good.
            engine.execute(items.value, report: { [weak self] in self?.onEvent?($0) })
        }
    }

    /// Notifies `data` on the response characteristic, split by the subscribers' MTU (or by
    /// `length`), with flow control; `completion` runs once the last packet is handed to bluetoothd.
    public func send(_ data: Data, length: PeripheralCommandLengthProtocol? = nil, completion: (() -> Void)? = nil) {
        let box = LoopBound((data, length, completion))
        LoopBridge.async { [engine] in
            let (data, length, completion) = box.value
            engine.send(data, length: length ?? MTUPeripheralCommandLength(), central: nil, completion: completion)
        }
    }

    /// Stops advertising and serving.
    public func stop() {
        LoopBridge.async { [engine] in engine.stop() }
    }

    // MARK: PeripheralManagerDelegate, forwarded to the engine on the loop

    /// Advertises once the service is registered.
    public func peripheralManager(_ peripheral: PeripheralManager, didAdd service: Service, error: Error?) {
        LoopBridge.async { [engine] in engine.added(service, error: error) }
    }
    /// Reports the advertisement.
    public func peripheralManagerDidStartAdvertising(_ peripheral: PeripheralManager, error: Error?) {
        LoopBridge.async { [engine] in engine.advertisingStarted(error: error) }
    }
    /// Answers reads of `.readable` characteristics.
    public func peripheralManager(_ peripheral: PeripheralManager, didReceiveRead request: ATTRequest) {
        LoopBridge.async { [engine] in engine.read(request) }
    }
    /// Answers the writes and runs the commands.
    public func peripheralManager(_ peripheral: PeripheralManager, didReceiveWrite requests: [ATTRequest]) {
        LoopBridge.async { [engine] in engine.write(requests) }
    }
    /// Sends what waited for room.
    public func peripheralManagerIsReady(toUpdateSubscribers peripheral: PeripheralManager) {
        LoopBridge.async { [engine] in engine.pump() }
    }
    /// Reports the subscription.
    public func peripheralManager(_ peripheral: PeripheralManager, central: Central, didSubscribeTo characteristic: Characteristic) {
        LoopBridge.async { [engine] in engine.subscription(central, characteristic, on: true) }
    }
    /// Reports the unsubscription.
    public func peripheralManager(_ peripheral: PeripheralManager, central: Central, didUnsubscribeFrom characteristic: Characteristic) {
        LoopBridge.async { [engine] in engine.subscription(central, characteristic, on: false) }
    }
    /// Reports the central.
    public func peripheralManager(_ peripheral: PeripheralManager, centralDidConnect central: Central) {
        LoopBridge.async { self.onEvent?(.centralConnected(central)) }
    }
    /// Reports the central and forgets its half-received request.
    public func peripheralManager(_ peripheral: PeripheralManager, centralDidDisconnect central: Central) {
        LoopBridge.async { [engine] in
            engine.forget(central)
            self.onEvent?(.centralDisconnected(central))
        }
    }
}
