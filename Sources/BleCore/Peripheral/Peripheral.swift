import BleDBus
import BlueZVocabulary
import Foundation
import Glibc

// @unchecked: an any-thread facade (see ThreadingModel.md). Its mutable state is @BleLoop-
// isolated or behind a lock; the class cannot be @BleLoop itself, because CoreBluetooth-shaped
// code calls it from any thread without `await`.
/// A remote peripheral (BlueZ `Device1`), as CoreBluetooth's `CBPeripheral`.
///
/// Methods may be called from any thread; results arrive through `delegate` and
/// `multiDelegate`. Every operation ends: with its result, an error, its deadline
/// (`CentralManagerOptions.operationTimeout`) or — all at once — a disconnect. Operations on one
/// characteristic or descriptor run one at a time, because bluetoothd refuses a second write
/// with InProgress.
public final class Peripheral: Peer, @unchecked Sendable {
    /// The device address (`AA:BB:CC:DD:EE:FF`).
    public let address: String
    /// Receives every event after `delegate` (FXBlueTooth's `peripheral.multiDelegate`).
    public let multiDelegate = PeripheralMultiDelegate()
    private let delegateBox = Locked<WeakDelegate>(WeakDelegate())

    private struct WeakDelegate { weak var value: PeripheralDelegate? }

    /// The primary delegate (held weakly).
    public var delegate: PeripheralDelegate? {
        get { delegateBox.value.value }
        set { delegateBox.value = WeakDelegate(value: newValue) }
    }

    /// The BlueZ session: calls, the cache and the callback queue. Held strongly, so that a
    /// released manager still ends this peripheral's operations with `.managerReleased`.
    let session: BlueZSession
    @BleLoop var devicePath: ObjectPath
    @BleLoop var currentState: PeripheralState = .disconnected
    @BleLoop var resolvedServices: [Service]?
    @BleLoop var servicesByPath: [ObjectPath: Service] = [:]
    @BleLoop var characteristicsByPath: [ObjectPath: Characteristic] = [:] {
        // The session remembers where the last notification went; a changed map may move it.
        didSet { session.notificationRoutesChanged() }
    }
    @BleLoop var descriptorsByPath: [ObjectPath: Descriptor] = [:]
    @BleLoop var attempt: ConnectAttempt?
    // Touched several times per GATT operation; loop-confined, and never changed while a
    // completion runs (completions run after the queues and deadlines are updated): without
    // the runtime's exclusivity bookkeeping, as the connection's call state (see Connection).
    @exclusivity(unchecked) @BleLoop var operations = OperationQueues()
    /// The deadlines of the operations running (see `OperationDeadlines`).
    @exclusivity(unchecked) @BleLoop var deadlines = OperationDeadlines()
    @BleLoop var serviceWaits: [ServiceWait] = []
    @BleLoop var lastName: String?
    @BleLoop var wasReadyToWrite = true
    /// Loop-side listeners inside the package (the DSL's command engine): called on the loop,
    /// with the event's data, before the delegates' callbacks are queued.
    @BleLoop var loopObservers: [WeakLoopObserver] = []
    /// The ATT MTU BlueZ reported on any of this device's characteristics (5.62+) on this
    /// link, when known. Forgotten when the link goes: the next link negotiates its own.
    @BleLoop var knownMTU: UInt16?
    /// A link was lost: the `MTU` values in the object cache may be an earlier link's, because
    /// bluetoothd 5.66 drops the property at disconnection without a signal (src/gatt-client.c,
    /// `characteristic_mtu_exists`) and the cache keeps the last value it heard.
    @BleLoop var cachedMTUMayBeStale = false
    /// Counts links: a reply or a socket event from an earlier link is recognised as such.
    @BleLoop var linkGeneration: UInt64 = 0
    /// Keys whose next operation is to start, and whether that loop is running.
    @exclusivity(unchecked) @BleLoop var keysToStart: [OperationKey] = []
    @exclusivity(unchecked) @BleLoop var startingNext = false
    /// `peerIsBlueZ`, worked out once per `Modalias` value.
    @BleLoop var blueZPeerVerdict: Bool?

    @BleLoop init(session: BlueZSession, path: ObjectPath, address: String, identifier: UUID) {
        self.session = session
        self.devicePath = path
        self.address = address
        self.lastName = session.cache?.properties(path, BlueZ.device)?[BlueZ.Device1.name]
        super.init(identifier: identifier)
    }

    // MARK: Public state

    /// The name (GAP name once connected, else the advertised one).
    public var name: String? { LoopBridge.sync { self.deviceProperties?[BlueZ.Device1.name] ?? self.lastName } }
    /// Where the link is now (BlueZ's `Connected`, and the connect or disconnect in flight).
    public var state: PeripheralState { LoopBridge.sync { self.currentState } }
    /// The services found by `discoverServices`, nil before.
    public var services: [Service]? { LoopBridge.sync { self.resolvedServices } }
    /// False while write-without-response packets wait for flow control; then
    /// `peripheralIsReady(toSendWriteWithoutResponse:)` follows.
    public var canSendWriteWithoutResponse: Bool { LoopBridge.sync { !self.hasWriteBacklog } }
    /// The last RSSI BlueZ reported (only while discovering), nil when unknown.
    public var rssi: Int? { LoopBridge.sync { self.deviceProperties?[BlueZ.Device1.rssi].map(Int.init) } }

    /// The largest value one write can carry without losing it: never more than 512, the ATT
    /// maximum attribute length; for `.withoutResponse` also at most the ATT MTU − 3 of the
    /// current link (BlueZ's `MTU` property, 5.62+, read anew on each link; 23 assumed until it
    /// is known and while disconnected, so 20). A peer that identifies as BlueZ
    /// (its PnP ID in `Modalias`) gets 510: bluetoothd's server counts the 2-byte handle against
    /// 512, answers 511–512-byte requests with `Invalid Length` and drops such commands without
    /// a word. A longer `writeValue` fails with `.valueTooLong` before anything is sent.
    public func maximumWriteValueLength(for type: CharacteristicWriteType) -> Int {
        LoopBridge.sync { self.writeLimit(for: type) }
    }

    // MARK: Public operations

    /// Lists the resolved services (all, or those with `serviceUUIDs`); `didDiscoverServices` follows.
    /// A requested service that is not exported yet is waited for (ServicesResolved may come first,
    /// bluez #1489), then reported as `.serviceNotFound`.
    public func discoverServices(_ serviceUUIDs: [BluetoothUUID]?) {
        LoopBridge.async { self.performDiscoverServices(serviceUUIDs) }
    }

    /// Lists a service's characteristics; `didDiscoverCharacteristicsFor` follows.
    public func discoverCharacteristics(_ characteristicUUIDs: [BluetoothUUID]?, for service: Service) {
        LoopBridge.async { self.performDiscoverCharacteristics(characteristicUUIDs, for: service) }
    }

    /// Lists the services `service` includes (BlueZ's `Includes`), all of them or those of
    /// `includedServiceUUIDs`; `didDiscoverIncludedServicesFor` follows and
    /// `service.includedServices` holds them. Included services are also in
    /// `peripheral.services` (bluetoothd exports every service it found).
    public func discoverIncludedServices(_ includedServiceUUIDs: [BluetoothUUID]?, for service: Service) {
        LoopBridge.async { self.performDiscoverIncludedServices(includedServiceUUIDs, for: service) }
    }

    /// Lists a characteristic's descriptors; `didDiscoverDescriptorsFor` follows.
    public func discoverDescriptors(for characteristic: Characteristic) {
        LoopBridge.async { self.performDiscoverDescriptors(for: characteristic) }
    }

    /// Reads the value; `didUpdateValueFor` follows once (never also as a notification).
    public func readValue(for characteristic: Characteristic) {
        if MainLoop.shared.isCurrent { return LoopBridge.inline { self.performRead(characteristic) } }
        LoopBridge.async { self.performRead(characteristic) }
    }

    /// Reads a descriptor; `didUpdateValueFor descriptor` follows.
    public func readValue(for descriptor: Descriptor) {
        LoopBridge.async { self.performRead(descriptor) }
    }

    /// Writes `data`. With response (or reliable): `didWriteValueFor` follows. Without response:
    /// sent through the `AcquireWrite` socket when BlueZ offers one, else as paced `command`
    /// writes; watch `canSendWriteWithoutResponse`.
    public func writeValue(_ data: Data, for characteristic: Characteristic, type: CharacteristicWriteType) {
        if MainLoop.shared.isCurrent { return LoopBridge.inline { self.performWrite(data, characteristic, type) } }
        LoopBridge.async { self.performWrite(data, characteristic, type) }
    }

    /// Writes a descriptor; `didWriteValueFor descriptor` follows. BlueZ refuses CCCD writes.
    public func writeValue(_ data: Data, for descriptor: Descriptor) {
        LoopBridge.async { self.performWrite(data, descriptor) }
    }

    /// Enables or disables notifications/indications; `didUpdateNotificationStateFor` follows.
    /// Uses `AcquireNotify` when offered, else (or after fd EOF, or when
    /// `prefersStartNotify`) `StartNotify`.
    public func setNotifyValue(_ enabled: Bool, for characteristic: Characteristic) {
        LoopBridge.async { self.performSetNotify(enabled, characteristic) }
    }

    /// Reports the RSSI BlueZ last saw (BlueZ has no RSSI read on a connected LE link);
    /// `didReadRSSI` follows, with `.notAvailable` when BlueZ has none (outside discovery).
    public func readRSSI() {
        LoopBridge.async { self.performReadRSSI() }
    }

    // MARK: - Loop side: helpers

    @BleLoop var cache: ObjectCache? { session.cache }
    @BleLoop var deviceProperties: PropertyMap? { cache?.properties(devicePath, BlueZ.device) }
    @BleLoop package var isLinkUp: Bool { currentState == .connected }

    /// The ATT MTU of this link: the last `MTU` BlueZ reported on one of this device's
    /// characteristics on it, or 23 (the LE default) when none did yet or the value is
    /// impossible (below 23). Never an earlier link's: a reconnect may negotiate a smaller one.
    @BleLoop package var negotiatedMTU: UInt16 {
        if knownMTU == nil, !cachedMTUMayBeStale, isLinkUp, let cache {
            for path in cache.children(of: devicePath, with: BlueZ.gattCharacteristic) {
                if let mtu = cache.properties(path, BlueZ.gattCharacteristic)?[BlueZ.GattCharacteristic1.mtu] {
                    noteMTU(mtu, from: path)
                    break
                }
            }
        }
        return knownMTU ?? 23
    }

    @BleLoop func noteMTU(_ mtu: UInt16, from path: ObjectPath) {
        guard mtu >= 23 else {
            BleLog.warning("\(path) reports MTU \(mtu), below the LE minimum of 23; assuming 23")
            return
        }
        knownMTU = mtu
    }

    /// Asks bluetoothd for this link's MTU. bluetoothd 5.66 announces a change of `MTU` only to
    /// characteristic objects created on the link of the exchange, after them: objects kept
    /// from an earlier link (its GATT cache) never hear the new link's exchange, and the
    /// objects created at the first connection come after it. So the value is read once the
    /// link is up; until the answer, `negotiatedMTU` is 23 (or what the link announced).
    @BleLoop func refreshMTU() {
        guard let cache, let path = cache.children(of: devicePath, with: BlueZ.gattCharacteristic).sorted().first else { return }
        let link = linkGeneration
        session.call(path, BlueZ.properties, FreedesktopDBus.Properties.get, [.string(BlueZ.gattCharacteristic), .string(BlueZ.GattCharacteristic1.mtu.name)]) {
            [weak self] result in
            guard let self, self.linkGeneration == link, self.isLinkUp else { return }
            switch result {
            case .success(let body):
                guard let mtu = body.first.flatMap(BlueZ.GattCharacteristic1.mtu.decode(getReply:)) else {
                    return BleLog.warning("\(path): MTU of an unexpected type (\(body)); keeping \(self.negotiatedMTU)")
                }
                self.noteMTU(mtu, from: path)
            case .failure(let error):
                // Older bluetoothd (before 5.62) has no `MTU`: 23 it is, as CoreBluetooth assumes.
                BleLog.debug("\(path): no MTU (\(error)); assuming \(self.negotiatedMTU)")
            }
        }
    }

    /// The peer's GATT server is bluetoothd (vendor 0x1D6B, product 0x0246: BlueZ's own PnP ID).
    @BleLoop var peerIsBlueZ: Bool {
        if let blueZPeerVerdict { return blueZPeerVerdict }
        // No Modalias is a verdict too (every write asks; the cache lookups cost more than the
        // write's own checks): forgotten when Modalias changes, is invalidated, or the device
        // object is added or loaded again.
        let verdict = deviceProperties?[BlueZ.Device1.modalias].map { BlueZ.PnPID.isBlueZ(modalias: $0) } ?? false
        blueZPeerVerdict = verdict
        return verdict
    }

    /// See `maximumWriteValueLength(for:)`.
    @BleLoop package func writeLimit(for type: CharacteristicWriteType) -> Int {
        let attributeLimit = peerIsBlueZ ? 510 : 512
        guard type == .withoutResponse else { return attributeLimit }
        return min(Int(negotiatedMTU) - 3, attributeLimit)
    }

    /// Queues `body` for every delegate on the callback queue.
    @BleLoop func emit(_ body: @escaping @Sendable (PeripheralDelegate) -> Void) {
        // Delegates are the app's objects, called only on the queue the app chose (as
        // CoreBluetooth does); the box carries them there and nothing else touches them.
        if session.callbacks.runsAtOnce {
            // On the loop with nothing waiting: call now, without a delivery closure per event.
            if let delegate { body(delegate) }
            if !multiDelegate.isEmpty { body(multiDelegate) }
            return
        }
        let primary = Unchecked(delegate)
        let multi = multiDelegate.isEmpty ? nil : multiDelegate
        session.callbacks.deliver {
            if let delegate = primary.value { body(delegate) }
            if let multi { body(multi) }
        }
    }

    /// Queues a value callback that carries its value: inside it, on whatever queue,
    /// `characteristic.value` is this value, not whatever arrived since.
    @BleLoop func emitValue(_ value: Data?, for characteristic: Characteristic, error: BleError?) {
        for observer in loopObservers { observer.value?.peripheral(self, didReceive: value, for: characteristic, error: error) }
        guard session.callbacks.queue != nil else {
            // On the loop the callback runs before anything else can change `value`.
            return emit { $0.peripheral(self, didUpdateValueFor: characteristic, error: error) }
        }
        let delivered = DeliveredValue(attribute: ObjectIdentifier(characteristic), value: value)
        emit { delegate in
            DeliveredValue.$current.withValue(delivered) {
                delegate.peripheral(self, didUpdateValueFor: characteristic, error: error)
            }
        }
    }

    /// A descriptor's value callback, carrying its value like `emitValue(_:for:error:)`.
    @BleLoop func emitValue(_ value: Data?, for descriptor: Descriptor, error: BleError?) {
        for observer in loopObservers { observer.value?.peripheral(self, didReceive: value, for: descriptor, error: error) }
        let delivered = DeliveredValue(attribute: ObjectIdentifier(descriptor), value: value)
        emit { delegate in
            DeliveredValue.$current.withValue(delivered) {
                delegate.peripheral(self, didUpdateValueFor: descriptor, error: error)
            }
        }
    }

    @BleLoop func emitWritten(_ characteristic: Characteristic, error: BleError?) {
        for observer in loopObservers { observer.value?.peripheral(self, didWrite: characteristic, error: error) }
        emit { $0.peripheral(self, didWriteValueFor: characteristic, error: error) }
    }

    @BleLoop func emitNotificationState(_ characteristic: Characteristic, error: BleError?) {
        let notifying = characteristic.isNotifyingOnLoop
        for observer in loopObservers { observer.value?.peripheral(self, notificationStateOf: characteristic, isOn: notifying, error: error) }
        emit { $0.peripheral(self, didUpdateNotificationStateFor: characteristic, error: error) }
    }

    @BleLoop func emitReadyToWrite() {
        for observer in loopObservers { observer.value?.peripheralIsReadyToWriteWithoutResponse(self) }
        emit { $0.peripheralIsReady(toSendWriteWithoutResponse: self) }
    }

    @BleLoop func emitCentral(_ body: @escaping @Sendable (CentralManagerDelegate, CentralManager) -> Void) {
        session.emitCentral(body)
    }

    /// Adds a loop-side observer (held weakly); the DSL's engine listens this way, with no hop.
    @BleLoop package func addLoopObserver(_ observer: PeripheralLoopObserver) {
        loopObservers.removeAll { $0.value == nil || $0.value === observer }
        loopObservers.append(WeakLoopObserver(value: observer))
    }

    /// Removes a loop-side observer.
    @BleLoop package func removeLoopObserver(_ observer: PeripheralLoopObserver) {
        loopObservers.removeAll { $0.value == nil || $0.value === observer }
    }

    @BleLoop func attach(path: ObjectPath) {
        blueZPeerVerdict = nil
        if path != devicePath {
            devicePath = path
            forgetObjects()
        }
    }

    /// Restoration: BlueZ already has the link.
    @BleLoop func adoptConnection() {
        guard deviceProperties?[BlueZ.Device1.connected] == true else { return }
        currentState = deviceProperties?[BlueZ.Device1.servicesResolved] == true ? .connected : .connecting
        if currentState == .connecting {
            attempt = ConnectAttempt(retriesLeft: 0)
            attempt?.linkUp = true
            checkReady()
        }
    }

    /// The session closed (the manager was released or closed): everything pending ends with
    /// `reason`, channels are released.
    @BleLoop func sessionClosed(_ reason: BleError) {
        linkLost(error: reason, report: false)
    }

    // MARK: Device events

    @BleLoop func deviceChanged(_ changed: PropertyMap, invalidated: [String]) {
        // While scanning nearly every change is RSSI or advertising data, which only the
        // central cares about: one pass over the change's keys instead of nine lookups.
        guard Self.concernsThePeripheral(changed, invalidated: invalidated) else { return }
        if let name = changed[BlueZ.Device1.name], name != lastName {
            lastName = name
            emit { $0.peripheralDidUpdateName(self) }
        }
        if changed[BlueZ.Device1.connected] == false || changed[BlueZ.Device1.servicesResolved] == false {
            linkWentDown()
        }
        if BlueZ.Device1.modalias.isPresent(in: changed) || invalidated.contains(BlueZ.Device1.modalias.name) { blueZPeerVerdict = nil }
        if let newAddress = changed[BlueZ.Device1.address], newAddress != address { addressChanged(to: newAddress) }
        if BlueZ.Device1.connected.isPresent(in: changed) || BlueZ.Device1.servicesResolved.isPresent(in: changed) || BlueZ.Device1.modalias.isPresent(in: changed) { checkReady() }
    }

    /// The `Device1` properties `deviceChanged` acts on.
    private static let peripheralKeys: Set<String> = [BlueZ.Device1.name.name, BlueZ.Device1.connected.name,
                                                      BlueZ.Device1.servicesResolved.name, BlueZ.Device1.modalias.name,
                                                      BlueZ.Device1.address.name]

    private nonisolated static func concernsThePeripheral(_ changed: PropertyMap, invalidated: [String]) -> Bool {
        for key in changed.keys where peripheralKeys.contains(key) { return true }
        for key in invalidated where peripheralKeys.contains(key) { return true }
        return false
    }

    @BleLoop func deviceRemoved() {
        if let attempt {
            finishAttempt(attempt, .failure(.deviceGone(address: address)))
        } else if currentState != .disconnected {
            linkLost(error: .deviceGone(address: address), report: true)
        }
        forgetObjects()
    }

    @BleLoop func gattObjectAdded(_ path: ObjectPath) {
        checkReady()
        recheckServiceWaits()
    }

    @BleLoop func gattObjectRemoved(_ path: ObjectPath) {
        if let service = servicesByPath.removeValue(forKey: path) {
            resolvedServices?.removeAll { $0 === service }
            for (charPath, characteristic) in characteristicsByPath where charPath.isDescendant(of: path) {
                teardownCharacteristic(characteristic, releaseSession: false)
                characteristicsByPath.removeValue(forKey: charPath)
            }
            descriptorsByPath = descriptorsByPath.filter { !$0.key.isDescendant(of: path) }
            failOperations(under: path, with: .attributeGone)
            emit { $0.peripheral(self, didModifyServices: [service]) }
        }
    }

    /// bluetoothd's objects are gone (daemon restart, device removed): drop our handles.
    @BleLoop func forgetObjects() {
        for characteristic in characteristicsByPath.values { teardownCharacteristic(characteristic, releaseSession: false) }
        servicesByPath.removeAll()
        characteristicsByPath.removeAll()
        descriptorsByPath.removeAll()
        resolvedServices = nil
    }
}
