import BleDBus
import Foundation

/// The serving adapter, the daemon's comings and goings, and the centrals on the adapter.
extension PeripheralManager {
    @BleLoop func open() async {
        guard !closed else { return }
        adapterWatch.onEvent = { [weak self] event in self?.adapterEvent(event) }
        session.onObjectEvent = { [weak self] event in self?.cacheEvent(event) }
        session.onBusLost = { [weak self] in
            guard let self, !self.closed else { return }
            self.adapterWatch.busFailed(.noBus("the D-Bus connection closed"), lost: true)
        }
        do {
            try await session.open()
        } catch {
            BleLog.error("cannot open the D-Bus bus: \(error)")
            adapterWatch.busFailed(error, lost: false)
            return
        }
        installOwnerCheck()
        let queued = queuedServices
        queuedServices.removeAll()
        for service in queued { addService(service) }
    }

    @BleLoop func shutDown() {
        guard !closed else { return }
        closed = true
        adapterWatch.stop()
        compatibilityAdvertisement = nil
        for path in Array(advertisements.keys) { endAdvertisement(path: path, cancelled: true) }
        unregisterApplication()
        for service in services { service.closeSockets() }
        // The unregister calls above are already sent; closing after them keeps their order.
        session.close(.cancelled)
    }

    @BleLoop func cacheEvent(_ event: CacheEvent) {
        adapterWatch.handle(event)
        switch event {
        case .notified, .loaded, .loadFailed, .daemonLost:
            break
        case .added(let path, let interfaces):
            if interfaces.contains(BlueZ.device) { deviceChanged(path) }
        case .removed(let path, let interfaces, _):
            if interfaces.contains(BlueZ.device), let central = centralsByPath.removeValue(forKey: path), central.isConnected {
                centralLeft(central)
            }
        case .changed(let path, let interface, let changed, _):
            if interface == BlueZ.device, path.parent == adapterPath, BlueZ.Device1.connected.isPresent(in: changed) { deviceChanged(path) }
        }
    }

    /// What the adapter watch saw, as the serving side's business.
    @BleLoop func adapterEvent(_ event: AdapterEvent) {
        switch event {
        case .loaded:
            break
        case .daemonLost, .busLost, .adapterRemoved:
            // bluetoothd forgets applications and advertisements; they are registered again
            // when it (or the adapter) returns (as `peripheral.py` does on bluetoothd 5.66).
            daemonGone()
        case .adapterChosen:
            adoptCentrals()
        case .stateChanged(_, let state):
            setState(state)
            if state == .poweredOn { registrationsDue() }
        }
    }

    /// Everything registered with the departed daemon (or adapter) is gone.
    @BleLoop func daemonGone() {
        if options.restoreIdentifier != nil, !services.isEmpty || compatibilityAdvertisement != nil { restorationDue = true }
        application.registered = false
        application.inFlight = false
        for record in advertisements.values where record.registration?.state == .active {
            record.registered = false
            record.registration?.setState(.registering)
        }
        for service in services { service.daemonGone() }
        for central in centralsByPath.values where central.isConnected { centralLeft(central) }
        centralsByPath.removeAll()
        flow.reset()
    }

    /// Registers what should be registered and is not (after start, power-on, a restart).
    @BleLoop func registrationsDue() {
        guard currentState == .poweredOn else { return }
        // A registration on its way (a service added from the poweredOn callback) is not due again.
        if !services.isEmpty, !application.registered, !application.inFlight { registerApplication() }
        for record in advertisements.values where !record.registered && !record.inFlight { registerAdvertisement(record) }
    }

    // MARK: Centrals

    @BleLoop func adoptCentrals() {
        guard let cache = session.cache, let adapterPath else { return }
        for path in cache.children(of: adapterPath, with: BlueZ.device) where path.parent == adapterPath { deviceChanged(path) }
    }

    /// A `Device1` on the serving adapter appeared or changed `Connected`.
    @BleLoop func deviceChanged(_ path: ObjectPath) {
        guard path.parent == adapterPath, let properties = session.cache?.properties(path, BlueZ.device) else { return }
        let connected = properties[BlueZ.Device1.connected] == true
        if connected {
            let central = centralObject(path)
            if !central.isConnected || centralsByPath[path] == nil {
                central.setConnected(true)
                centralsByPath[path] = central
            }
            if !(connectedAnnounced.contains(path)) {
                connectedAnnounced.insert(path)
                emit { $0.peripheralManager(self, centralDidConnect: central) }
            }
        } else if let central = centralsByPath[path], central.isConnected {
            centralLeft(central)
        }
    }

    @BleLoop func centralLeft(_ central: Central) {
        central.setConnected(false)
        guard let path = try? ObjectPath(central.devicePath) else { return }
        connectedAnnounced.remove(path)
        emit { $0.peripheralManager(self, centralDidDisconnect: central) }
    }

    /// The `Central` for a `Device1` path on the serving adapter, made on first sight.
    @BleLoop func centralObject(_ path: ObjectPath) -> Central {
        if let known = centralsByPath[path] { return known }
        let cached = session.cache?.properties(path, BlueZ.device)?[BlueZ.Device1.address]
        let address = cached ?? Self.address(fromDevicePath: path)
        let adapterAddress = adapterPath.flatMap { session.cache?.properties($0, BlueZ.adapter)?[BlueZ.Adapter1.address] } ?? ""
        let central = Central(identifier: PeripheralIdentifier.make(adapterAddress: adapterAddress, deviceAddress: address),
                              address: address, devicePath: path.rawValue)
        central.setConnected(session.cache?.properties(path, BlueZ.device)?[BlueZ.Device1.connected] == true)
        centralsByPath[path] = central
        return central
    }

    /// The `Central` of a request's `device`, only when it names an existing `Device1` on the
    /// serving adapter: anyone owning `org.bluez` can put any path there, and a `Central` kept
    /// per invented path would grow the table without bound. bluetoothd announces a device
    /// (InterfacesAdded, on the same connection, so before) ahead of any request from it.
    @BleLoop func knownCentral(_ path: ObjectPath) -> Central? {
        guard let adapterPath, path.parent == adapterPath, session.cache?.properties(path, BlueZ.device) != nil else {
            // Said once: each such request would otherwise let its sender fill the log.
            let text = "a request names \(path), which is not a device on \(adapterPath?.rawValue ?? "the serving adapter"): from an unidentified central"
            if warnedAboutUnknownDevices { BleLog.debug(text) } else { BleLog.warning(text + " (further ones are logged at debug level)") }
            warnedAboutUnknownDevices = true
            return nil
        }
        return centralObject(path)
    }

    /// `dev_AA_BB_CC_DD_EE_FF` → `AA:BB:CC:DD:EE:FF`.
    static func address(fromDevicePath path: ObjectPath) -> String {
        let element = String(path.lastElement)
        guard element.hasPrefix(BlueZ.Paths.deviceElementPrefix) else { return element }
        return element.dropFirst(BlueZ.Paths.deviceElementPrefix.count).replacingOccurrences(of: "_", with: ":")
    }

    /// What `LEAdvertisingManager1` reports on the serving adapter.
    @BleLoop func currentCapabilities() -> AdvertisingCapabilities? {
        guard let adapterPath, let properties = session.cache?.properties(adapterPath, BlueZ.LEAdvertisingManager1.interface) else { return nil }
        return AdvertisingCapabilities(supportedIncludes: properties[BlueZ.LEAdvertisingManager1.supportedIncludes] ?? [],
                                       activeInstances: Int(properties[BlueZ.LEAdvertisingManager1.activeInstances] ?? 0),
                                       supportedInstances: Int(properties[BlueZ.LEAdvertisingManager1.supportedInstances] ?? 0),
                                       secondaryChannels: properties[BlueZ.LEAdvertisingManager1.supportedSecondaryChannels] ?? [])
    }

    /// Refuses calls to this manager's objects from anyone but the current owner of `org.bluez`.
    @BleLoop func installOwnerCheck() {
        session.bus?.acceptCallsOnlyFromBlueZ(under: [applicationRoot, advertisingRoot], for: session)
    }

    /// CoreBluetooth's `willRestoreState`, for what BleKit is about to register again.
    @BleLoop func announceRestoration() {
        let services = self.services.map(\.service)
        let advertisement = compatibilityAdvertisement?.advertisement
        emit { delegate in
            var state: [String: Any] = [CBPeripheralManagerOptionRestoreIdentifierKey: self.options.restoreIdentifier ?? ""]
            if !services.isEmpty { state[CBPeripheralManagerRestoredStateServicesKey] = services }
            if let advertisement {
                var data: [String: Any] = [:]
                if let name = advertisement.localName { data[CBAdvertisementDataLocalNameKey] = name }
                if !advertisement.serviceUUIDs.isEmpty { data[CBAdvertisementDataServiceUUIDsKey] = advertisement.serviceUUIDs }
                state[CBPeripheralManagerRestoredStateAdvertisementDataKey] = data
            }
            delegate.peripheralManager(self, willRestoreState: state)
        }
    }
}
