import BleDBus
import Foundation

/// Adapter, daemon and device bookkeeping: what the session's cache events mean to the central.
extension CentralManager {
    // MARK: Cache events

    @BleLoop func cacheEvent(_ event: CacheEvent) {
        adapterWatch.handle(event)
        switch event {
        case .notified, .loaded, .loadFailed, .daemonLost:
            // A characteristic's business (the session routes it), or the adapter watch's.
            break
        case .added(let path, let interfaces):
            if interfaces.contains(BlueZ.device) { deviceAppeared(path) }
        case .removed(let path, let interfaces, let last):
            if interfaces.contains(BlueZ.device), let address = last[BlueZ.device]?[BlueZ.Device1.address] {
                peripheralsByAddress[address]?.deviceRemoved()
            }
            if interfaces.contains(BlueZ.device) { deviceObjectRemoved(path) }
        case .changed(let path, let interface, let changed, _):
            switch interface {
            case BlueZ.LEAdvertisingManager1.interface where path == adapterPath:
                if BlueZ.LEAdvertisingManager1.activeInstances.isPresent(in: changed) { warnIfScanningOnAdvertisingAdapter() }
            case BlueZ.adapter where path == adapterPath:
                if changed[BlueZ.Adapter1.discovering] == false, discovery == .running, scan != nil, currentState == .poweredOn {
                    // Another client or a power cycle ended discovery; our request still stands.
                    discovery = .idle
                    beginDiscovery()
                }
            case BlueZ.device:
                // The session already gave the change to the device's peripheral, if any.
                guard let adapterPath, path.isChild(of: adapterPath) else { break }
                if session.peripheral(at: path) == nil { deviceAppeared(path) }
                if scan != nil, Self.changesAdvertising(changed) {
                    considerDiscovery(path)
                }
            default:
                break
            }
        }
    }

    /// What the adapter watch saw, as the central's business.
    @BleLoop func adapterEvent(_ event: AdapterEvent) {
        switch event {
        case .loaded:
            adoptKnownDevices()
        case .daemonLost:
            daemonLost(error: .bluetoothRestarted)
        case .busLost:
            daemonLost(error: .noBus("the D-Bus connection closed"))
        case .adapterRemoved:
            for peripheral in peripheralsByAddress.values { peripheral.linkLost(error: .poweredOff, report: true) }
        case .adapterChosen:
            break
        case .stateChanged(let previous, let state):
            setState(state)
            if state == .poweredOn, scan != nil { beginDiscovery() }
            if state == .poweredOff, previous == .poweredOn {
                discovery = .idle
                for peripheral in peripheralsByAddress.values { peripheral.linkLost(error: .poweredOff, report: true) }
            }
        }
    }

    /// Device properties an advertisement changes: a change to any means the device was heard.
    static let advertisingKeys: Set<String> = [BlueZ.Device1.rssi.name, BlueZ.Device1.manufacturerData.name, BlueZ.Device1.serviceData.name,
                                               BlueZ.Device1.name.name, BlueZ.Device1.alias.name, BlueZ.Device1.uuids.name,
                                               BlueZ.Device1.txPower.name]

    /// Whether `changed` holds an advertising key. A loop over the change's own keys (one or two
    /// while scanning), not a lookup per advertising key; nonisolated, so the closure-free loop
    /// runs without the concurrency runtime's isolation check.
    nonisolated static func changesAdvertising(_ changed: PropertyMap) -> Bool {
        for key in changed.keys where advertisingKeys.contains(key) { return true }
        return false
    }

    /// True when the adapter this manager scans on is advertising (a peripheral role on this
    /// machine): such a scan does not find that peripheral.
    public var isScanningAdapterAdvertising: Bool { LoopBridge.sync { self.adapterPath.map { self.isAdvertising($0) } ?? false } }

    /// True while `adapter` has advertisements registered (by any process on this machine).
    @BleLoop func isAdvertising(_ adapter: ObjectPath) -> Bool {
        (cache?.properties(adapter, BlueZ.LEAdvertisingManager1.interface)?[BlueZ.LEAdvertisingManager1.activeInstances] ?? 0) > 0
    }

    /// Says plainly when the scan cannot find a peripheral advertising on this machine's same adapter.
    @BleLoop func warnIfScanningOnAdvertisingAdapter() {
        guard scan != nil, let adapterPath, isAdvertising(adapterPath) else { return }
        BleLog.warning("scanning on \(adapterPath.lastElement), which is advertising itself: an adapter does not hear its own "
            + "advertisements, so a peripheral on this machine advertising there is not found; pick another adapter "
            + "(CentralManagerOptions.adapter)")
    }

    /// bluetoothd (or the bus) left: fail everything and report disconnections.
    @BleLoop func daemonLost(error: BleError) {
        for path in Array(removalWaiters.keys) { deviceObjectRemoved(path) }
        discovery = .idle
        // The new daemon's devices are new objects: report them again when the scan resumes.
        scan?.reported.removeAll()
        for peripheral in peripheralsByAddress.values { peripheral.linkLost(error: error, report: true) }
        for peripheral in peripheralsByAddress.values { peripheral.forgetObjects() }
    }

    @BleLoop func adoptKnownDevices() {
        guard let cache, let adapterPath else { return }
        var restored: [Peripheral] = []
        for path in cache.children(of: adapterPath, with: BlueZ.device) where path.parent == adapterPath {
            guard let peripheral = deviceAppeared(path) else { continue }
            let properties = cache.properties(path, BlueZ.device)
            if options.restoreConnectedPeripherals, !restoredOnce, properties?[BlueZ.Device1.connected] == true {
                peripheral.adoptConnection()
                restored.append(peripheral)
            }
        }
        if options.restoreConnectedPeripherals, !restoredOnce {
            restoredOnce = true
            let dict: [String: Any] = [CBCentralManagerRestoredStatePeripheralsKey: restored]
            let box = Unchecked(dict)
            emit { $0.centralManager(self, willRestoreState: box.value) }
        }
    }

    /// The Peripheral for a device object of our adapter, created on first sight.
    @BleLoop @discardableResult func deviceAppeared(_ path: ObjectPath) -> Peripheral? {
        guard let cache, path.parent == adapterPath, let properties = cache.properties(path, BlueZ.device),
              let address = properties[BlueZ.Device1.address], let adapterAddress = currentAdapterAddress else { return nil }
        if let existing = peripheralsByAddress[address] {
            existing.attach(path: path)
            session.route(path, to: existing)
            // A device removed (RemoveDevice, expiry) and heard again comes back as a new
            // object whose InterfacesAdded already carries the report: no change follows it.
            if scan != nil { considerDiscovery(path) }
            return existing
        }
        let peripheral = Peripheral(session: session, path: path, address: address,
                                    identifier: PeripheralIdentifier.make(adapterAddress: adapterAddress, deviceAddress: address))
        peripheralsByAddress[address] = peripheral
        session.route(path, to: peripheral)
        if scan != nil { considerDiscovery(path) }
        return peripheral
    }

    @BleLoop func peripheral(at path: ObjectPath) -> Peripheral? {
        session.peripheral(at: path) ?? peripheralsByAddress.values.first { $0.devicePath == path }
    }
}
