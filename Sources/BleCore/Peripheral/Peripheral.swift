import BleDBus
import Foundation
import Glibc

/// A remote peripheral (BlueZ `Device1`), as CoreBluetooth's `CBPeripheral`.
///
/// Methods may be called from any thread; results arrive through `delegate` and
/// `multiDelegate`. Every operation ends: with its result, an error, its deadline
/// (`CentralManagerOptions.operationTimeout`) or — all at once — a disconnect. Operations on one
/// characteristic or descriptor run one at a time, because bluetoothd refuses a second write
/// with InProgress.
public final class Peripheral: @unchecked Sendable {
    /// Stable across runs: a name-based UUID of the adapter's and the device's addresses.
    public let identifier: UUID
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

    @BleLoop weak var manager: CentralManager?
    @BleLoop var devicePath: ObjectPath
    @BleLoop var currentState: PeripheralState = .disconnected
    @BleLoop var resolvedServices: [Service]?
    @BleLoop var servicesByPath: [ObjectPath: Service] = [:]
    @BleLoop var characteristicsByPath: [ObjectPath: Characteristic] = [:]
    @BleLoop var descriptorsByPath: [ObjectPath: Descriptor] = [:]
    @BleLoop var attempt: ConnectAttempt?
    @BleLoop var operations = OperationQueues()
    @BleLoop var serviceWaits: [ServiceWait] = []
    @BleLoop var lastName: String?
    @BleLoop var wasReadyToWrite = true

    @BleLoop init(manager: CentralManager, path: ObjectPath, address: String, identifier: UUID) {
        self.manager = manager
        self.devicePath = path
        self.address = address
        self.identifier = identifier
        self.lastName = manager.cache?.properties(path, BlueZ.device)?.string("Name")
    }

    // MARK: Public state

    /// The name (GAP name once connected, else the advertised one).
    public var name: String? { LoopBridge.sync { self.deviceProperties?.string("Name") ?? self.lastName } }
    /// The connection state.
    public var state: PeripheralState { LoopBridge.sync { self.currentState } }
    /// The services found by `discoverServices`, nil before.
    public var services: [Service]? { LoopBridge.sync { self.resolvedServices } }
    /// False while write-without-response packets wait for flow control; then
    /// `peripheralIsReady(toSendWriteWithoutResponse:)` follows.
    public var canSendWriteWithoutResponse: Bool { LoopBridge.sync { !self.hasWriteBacklog } }
    /// The last RSSI BlueZ reported (only while discovering), nil when unknown.
    public var rssi: Int? { LoopBridge.sync { self.deviceProperties?["RSSI"]?.as(Int16.self).map(Int.init) } }

    /// The largest value one write can carry: for `.withoutResponse` the ATT payload MTU − 3
    /// from BlueZ's `MTU` property (5.62+; 23 assumed when absent, so 20), for writes with
    /// response 512 (BlueZ does a long write).
    public func maximumWriteValueLength(for type: CharacteristicWriteType) -> Int {
        LoopBridge.sync {
            guard type == .withoutResponse else { return 512 }
            return Int(self.negotiatedMTU) - 3
        }
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

    /// Lists a characteristic's descriptors; `didDiscoverDescriptorsFor` follows.
    public func discoverDescriptors(for characteristic: Characteristic) {
        LoopBridge.async { self.performDiscoverDescriptors(for: characteristic) }
    }

    /// Reads the value; `didUpdateValueFor` follows once (never also as a notification).
    public func readValue(for characteristic: Characteristic) {
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

    @BleLoop var cache: ObjectCache? { manager?.cache }
    @BleLoop var deviceProperties: PropertyMap? { cache?.properties(devicePath, BlueZ.device) }
    @BleLoop var isLinkUp: Bool { currentState == .connected }

    @BleLoop var negotiatedMTU: UInt16 {
        for path in characteristicsByPath.keys.sorted() {
            if let mtu = cache?.properties(path, BlueZ.gattCharacteristic)?["MTU"]?.as(UInt16.self) { return mtu }
        }
        if let cache {
            for path in cache.children(of: devicePath, with: BlueZ.gattCharacteristic) {
                if let mtu = cache.properties(path, BlueZ.gattCharacteristic)?["MTU"]?.as(UInt16.self) { return mtu }
            }
        }
        return 23
    }

    @BleLoop func emit(_ body: @escaping (PeripheralDelegate) -> Void) {
        guard let manager else { return }
        let primary = delegate
        let multi = multiDelegate
        manager.callbacks.deliver {
            if let primary { body(primary) }
            body(multi)
        }
    }

    @BleLoop func emitCentral(_ body: @escaping (CentralManagerDelegate, CentralManager) -> Void) {
        guard let manager else { return }
        manager.emit { body($0, manager) }
    }

    @BleLoop func attach(path: ObjectPath) {
        if path != devicePath {
            devicePath = path
            forgetObjects()
        }
    }

    /// Restoration: BlueZ already has the link.
    @BleLoop func adoptConnection() {
        guard deviceProperties?.bool("Connected") == true else { return }
        currentState = deviceProperties?.bool("ServicesResolved") == true ? .connected : .connecting
        if currentState == .connecting {
            attempt = ConnectAttempt(retriesLeft: 0)
            attempt?.linkUp = true
            checkReady()
        }
    }

    // MARK: Device events

    @BleLoop func deviceChanged(_ changed: PropertyMap, invalidated: [String]) {
        if let name = changed.string("Name"), name != lastName {
            lastName = name
            emit { $0.peripheralDidUpdateName(self) }
        }
        if changed.bool("Connected") == false || changed.bool("ServicesResolved") == false {
            linkWentDown()
        }
        if changed["Connected"] != nil || changed["ServicesResolved"] != nil { checkReady() }
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
            operations.failAll(under: path, with: .attributeGone)
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
