import BleDBus
import Foundation

/// Adapter, daemon and device bookkeeping: what the session's cache events mean to the central.
extension CentralManager {
    // MARK: Cache events

    @BleLoop func cacheEvent(_ event: CacheEvent) {
        switch event {
        case .notified:
            // A characteristic's business: the session routes it to its peripheral.
            break
        case .loaded:
            currentStateError = nil
            daemonAbsence?.cancel()
            daemonAbsence = nil
            chooseAdapter()
            adoptKnownDevices()
        case .loadFailed(let error):
            currentStateError = error
            if case .accessDenied = error { return setState(.unauthorized) }
            setState(.unsupported)
            // A daemon that just claimed its name may not answer GetManagedObjects yet; try
            // again while it is on the bus.
            loadRetry = LoopTimer.scheduled(after: .seconds(1)) { [weak self] in self?.cache?.reload() }
        case .daemonLost:
            daemonLost(error: .bluetoothRestarted)
            watchDaemonAbsence()
        case .added(let path, let interfaces):
            if interfaces.contains(BlueZ.adapter) { chooseAdapter() }
            if interfaces.contains(BlueZ.device) { deviceAppeared(path) }
        case .removed(let path, let interfaces, let last):
            if interfaces.contains(BlueZ.adapter), path == adapterPath {
                adapterPath = nil
                for peripheral in peripheralsByAddress.values { peripheral.linkLost(error: .poweredOff, report: true) }
                chooseAdapter()
            }
            if interfaces.contains(BlueZ.device), let address = last[BlueZ.device]?[BlueZ.Device1.address] {
                peripheralsByAddress[address]?.deviceRemoved()
            }
            if interfaces.contains(BlueZ.device) { deviceObjectRemoved(path) }
        case .changed(let path, let interface, let changed, _):
            switch interface {
            case BlueZ.LEAdvertisingManager1.interface where path == adapterPath:
                if BlueZ.LEAdvertisingManager1.activeInstances.isPresent(in: changed) { warnIfScanningOnAdvertisingAdapter() }
            case BlueZ.adapter where path == adapterPath:
                if BlueZ.Adapter1.powered.isPresent(in: changed) || BlueZ.Adapter1.powerState.isPresent(in: changed) { updateStateFromAdapter() }
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

    @BleLoop func chooseAdapter() {
        guard let cache, cache.isLoaded else { return }
        let adapters = cache.all(with: BlueZ.adapter)
        if let current = adapterPath, adapters.contains(current) { return updateStateFromAdapter() }
        let wanted = options.adapter?.uppercased()
        if let wanted {
            adapterPath = adapters.first {
                $0.lastElement.uppercased() == wanted || cache.properties($0, BlueZ.adapter)?[BlueZ.Adapter1.address]?.uppercased() == wanted
            }
        } else {
            // An adapter does not hear its own advertisements: leave an advertising one (a
            // peripheral on this machine) to it and scan from another.
            let powered = adapters.filter { cache.properties($0, BlueZ.adapter)?[BlueZ.Adapter1.powered] == true }
            adapterPath = powered.first { !isAdvertising($0) } ?? powered.first ?? adapters.first
        }
        if let adapterPath { BleLog.info("using adapter \(adapterPath)") }
        updateStateFromAdapter()
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

    @BleLoop func updateStateFromAdapter() {
        guard let cache, cache.isLoaded else { return }
        guard let adapterPath, let properties = cache.properties(adapterPath, BlueZ.adapter) else {
            currentStateError = nil
            return setState(.unsupported)
        }
        // PowerState exists only with experimental features (5.66 has none); Powered decides otherwise.
        let powerState = properties[BlueZ.Adapter1.powerState]
        let powered = properties[BlueZ.Adapter1.powered] == true && (powerState == nil || powerState == "on")
        if !powered, options.powerOnAdapter, powerState != "off-blocked" {
            callBlueZ(adapterPath, BlueZ.properties, "Set", [.string(BlueZ.adapter), .string(BlueZ.Adapter1.powered.name), .variant(BlueZ.Adapter1.powered.encode(true))]) { result in
                if case .failure(let error) = result { BleLog.warning("could not power on \(adapterPath): \(error)") }
            }
        }
        let previous = currentState
        setState(powered ? .poweredOn : .poweredOff)
        if powered, previous != .poweredOn, scan != nil { beginDiscovery() }
        if !powered, previous == .poweredOn {
            discovery = .idle
            for peripheral in peripheralsByAddress.values { peripheral.linkLost(error: .poweredOff, report: true) }
        }
    }

    /// bluetoothd left: fail everything, report disconnections, wait for its return.
    @BleLoop func daemonLost(error: BleError) {
        for path in Array(removalWaiters.keys) { deviceObjectRemoved(path) }
        discovery = .idle
        adapterPath = nil
        // The new daemon's devices are new objects: report them again when the scan resumes.
        scan?.reported.removeAll()
        setState(.resetting)
        for peripheral in peripheralsByAddress.values { peripheral.linkLost(error: error, report: true) }
        for peripheral in peripheralsByAddress.values { peripheral.forgetObjects() }
    }

    /// bluetoothd does not come back on its own (not restarted, not installed): after
    /// `options.bluetoothdReturnTimeout` the state says so instead of `resetting` forever.
    @BleLoop func watchDaemonAbsence() {
        daemonAbsence?.cancel()
        let limit = options.bluetoothdReturnTimeout
        daemonAbsence = LoopTimer.scheduled(after: limit) { [weak self] in
            guard let self, !self.closed, self.currentState == .resetting else { return }
            self.daemonAbsence = nil
            self.currentStateError = .serviceUnknown("bluetoothd left the bus and has not returned within \(limit)")
            self.setState(.unsupported)
        }
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
