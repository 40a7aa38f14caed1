import BleDBus
import Foundation

/// Discovery: the scan request, BlueZ's discovery session, and which devices are reported.
extension CentralManager {
    // MARK: Scan on the loop

    @BleLoop func startScan(services: [BluetoothUUID]?, options: ScanOptions) {
        let restart = scan != nil
        scan = ScanRequest(services: services?.isEmpty == true ? nil : services, options: options)
        guard currentState == .poweredOn else {
            BleLog.info("scan requested while \(currentState); it starts when the adapter is powered on")
            return
        }
        warnIfScanningOnAdvertisingAdapter()
        if restart && discovery.hasSession {
            setDiscoveryFilter()
        } else {
            beginDiscovery()
        }
        // Devices BlueZ already knows and hears are reported from their next advertisement.
    }

    @BleLoop func discoveryFilter() -> DiscoveryFilter? {
        guard let scan else { return nil }
        return DiscoveryFilter(transport: scan.options.transport.discoveryFilterValue, duplicateData: scan.options.allowDuplicates,
                               uuids: scan.services?.map(\.uuidString128), rssi: scan.options.rssiThreshold.map { Int16(clamping: $0) },
                               pattern: scan.options.pattern)
    }

    /// This central's part of the process's discovery session on its adapter (nil without an
    /// adapter or a bus).
    @BleLoop var discoveryShare: DiscoveryShare? {
        guard let adapterPath, let bus = session.bus else { return nil }
        return bus.discovery(on: adapterPath, timeout: options.operationTimeout + .seconds(1))
    }

    /// Who this central is to the shared discovery session.
    @BleLoop var scanHolder: ClaimHolder { ClaimHolder(client: ObjectIdentifier(session), object: ObjectIdentifier(self)) }

    @BleLoop func setDiscoveryFilter(then next: (@BleLoop () -> Void)? = nil) {
        guard let share = discoveryShare, let filter = discoveryFilter() else { next?(); return }
        share.setFilter(filter, for: scanHolder) { next?() }
    }

    @BleLoop func beginDiscovery() {
        // While our StopDiscovery is pending, bluetoothd still counts the old session and would
        // refuse a start with InProgress, then end discovery: the stop's reply starts it again.
        guard let adapterPath, scan != nil, discovery == .idle, let share = discoveryShare else { return }
        discovery = .starting
        setDiscoveryFilter { [weak self] in
            guard let self, self.scan != nil, self.adapterPath == adapterPath else { return }
            share.start(self.scanHolder) { [weak self] result in
                guard let self else { return }
                switch result {
                case .success:
                    if self.discovery == .starting { self.discovery = .running }
                    BleLog.info("discovery started on \(adapterPath)")
                case .failure(.notReady), .failure(.bluetoothRestarted), .failure(.cancelled):
                    // The adapter went off or bluetoothd left on the way (the request stands and
                    // resumes at poweredOn), or the scan was stopped before discovery began.
                    BleLog.info("StartDiscovery did not take effect (\(result)); the scan resumes when the adapter is powered on")
                    if self.discovery == .starting { self.discovery = .idle }
                case .failure(let error):
                    BleLog.warning("StartDiscovery failed: \(error)")
                    if self.discovery == .starting { self.discovery = .idle }
                    self.scan = nil
                    self.emit { $0.centralManager(self, didFailToScan: error) }
                }
            }
        }
    }

    @BleLoop func endScan() {
        scan = nil
        guard discovery.hasSession, let adapterPath, let share = discoveryShare else { return }
        discovery = .stopping
        share.stop(scanHolder) { [weak self] result in
            if let self, self.discovery == .stopping {
                self.discovery = .idle
                // A scan asked for while the stop was on its way starts now.
                if self.scan != nil, self.currentState == .poweredOn, self.adapterPath == adapterPath { self.beginDiscovery() }
            }
            switch result {
            case .success, .failure(.notReady), .failure(.failed), .failure(.bluetoothRestarted), .failure(.noBus):
                // NotReady: the adapter went off, discovery is over anyway (HA #83673). No bus:
                // our connection closed (close()), and bluetoothd ends a leaving client's session.
                break
            case .failure(let error):
                BleLog.warning("StopDiscovery failed: \(error)")
            }
        }
    }

    @BleLoop func considerDiscovery(_ path: ObjectPath) {
        // The scan's fields are read, not the whole request copied: a copy would share the set
        // of reported addresses, and inserting would then copy it, once per discovery (O(n²)
        // for a crowd of devices).
        guard let services = scan.map(\.services), let options = scan?.options, let cache,
              let properties = cache.properties(path, BlueZ.device),
              let address = properties[BlueZ.Device1.address], let peripheral = peripheralsByAddress[address] else { return }
        // Without RSSI the device was not heard in this discovery (RSSI is invalidated when it stops).
        guard let rssi = properties[BlueZ.Device1.rssi] else { return }
        // A device already reported stays silent whatever it advertises: known before the
        // advertisement is built, which is most of a scan's cost in a crowd.
        if !options.allowDuplicates, scan?.reported.contains(address) == true { return }
        let advertisement = Self.advertisement(from: properties)
        if let services {
            let offered = Set(advertisement.serviceUUIDs).union(advertisement.serviceData.keys)
            guard services.contains(where: offered.contains) else { return }
        }
        if let threshold = options.rssiThreshold, Int(rssi) < threshold { return }
        if let pattern = options.pattern {
            let name = advertisement.localName ?? ""
            guard address.uppercased().hasPrefix(pattern.uppercased()) || name.hasPrefix(pattern) else { return }
        }
        if !options.allowDuplicates {
            guard scan?.reported.contains(address) == false else { return }
            scan?.reported.insert(address)
        }
        emit { $0.centralManager(self, didDiscover: peripheral, advertisementData: advertisement, rssi: Int(rssi)) }
    }

    package static func advertisement(from properties: PropertyMap) -> AdvertisementData {
        let manufacturer = properties[BlueZ.Device1.manufacturerData] ?? [:]
        var serviceData: [BluetoothUUID: Data] = [:]
        let rawServiceData: [String: Data] = properties[BlueZ.Device1.serviceData] ?? [:]
        for (key, value) in rawServiceData {
            if let uuid = BluetoothUUID(key) { serviceData[uuid] = value }
        }
        return AdvertisementData(localName: properties[BlueZ.Device1.name] ?? properties[BlueZ.Device1.alias].flatMap { alias in
                                     // bluetoothd shows the address with dashes as the alias of a nameless device.
                                     alias == properties[BlueZ.Device1.address]?.replacingOccurrences(of: ":", with: "-") ? nil : alias
                                 },
                                 manufacturerData: manufacturer, serviceData: serviceData,
                                 serviceUUIDs: (properties[BlueZ.Device1.uuids] ?? []).compactMap(BluetoothUUID.init),
                                 txPowerLevel: properties[BlueZ.Device1.txPower].map(Int.init),
                                 appearance: properties[BlueZ.Device1.appearance])
    }
}

extension ScanOptions.Transport {
    /// The discovery filter's `Transport` value, as the vocabulary spells it: the case names
    /// happen to match, but the wire value should not hang on a Swift spelling.
    var discoveryFilterValue: String {
        switch self {
        case .auto: return BlueZ.Adapter1.Transport.auto
        case .le: return BlueZ.Adapter1.Transport.le
        case .bredr: return BlueZ.Adapter1.Transport.bredr
        }
    }
}
