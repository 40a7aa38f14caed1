import BleDBus
import Foundation

/// A `discoverServices` call waiting for services BlueZ has not exported yet.
@BleLoop
final class ServiceWait {
    let wanted: [BluetoothUUID]
    var timer: LoopTimer?
    /// BleAsync's per-call answer, if the call came from there.
    let completion: (@BleLoop (Result<[Service], BleError>) -> Void)?
    init(wanted: [BluetoothUUID], completion: (@BleLoop (Result<[Service], BleError>) -> Void)? = nil) {
        self.wanted = wanted
        self.completion = completion
    }
}

extension Peripheral {
    /// Services from the cache (handles kept for objects seen before).
    @BleLoop func currentServices() -> [Service] {
        guard let cache else { return [] }
        return cache.children(of: devicePath, with: BlueZ.gattService).compactMap { path in
            if let known = servicesByPath[path] { return known }
            guard let properties = cache.properties(path, BlueZ.gattService),
                  let uuid = properties[BlueZ.GattCharacteristic1.uuid].flatMap(BluetoothUUID.init) else { return nil }
            let service = Service(path: path, uuid: uuid, isPrimary: properties[BlueZ.GattService1.primary] ?? true, owner: self)
            servicesByPath[path] = service
            return service
        }
    }

    /// `completion` (BleAsync's per-call answer) gets the services this call asked for.
    @BleLoop package func performDiscoverServices(_ uuids: [BluetoothUUID]?,
                                                  completion: (@BleLoop (Result<[Service], BleError>) -> Void)? = nil) {
        guard isLinkUp else {
            emit { $0.peripheral(self, didDiscoverServices: BleError.peripheralNotConnected) }
            completion?(.failure(.peripheralNotConnected))
            return
        }
        let wanted = uuids ?? []
        if missingServices(wanted).isEmpty { return completeServiceDiscovery(wanted, error: nil, completion: completion) }
        // ServicesResolved can precede the objects' InterfacesAdded (bluez #1489): wait briefly.
        let wait = ServiceWait(wanted: wanted, completion: completion)
        serviceWaits.append(wait)
        wait.timer = LoopTimer.scheduled(after: session.options.servicesResolvedGrace) { [weak self, weak wait] in
            guard let self, let wait, self.serviceWaits.contains(where: { $0 === wait }) else { return }
            self.serviceWaits.removeAll { $0 === wait }
            let missing = self.missingServices(wait.wanted)
            self.completeServiceDiscovery(wait.wanted, error: missing.first.map { BleError.serviceNotFound($0) }, completion: wait.completion)
        }
    }

    @BleLoop private func missingServices(_ wanted: [BluetoothUUID]) -> [BluetoothUUID] {
        let present = Set(currentServices().map(\.uuid))
        return wanted.filter { !present.contains($0) }
    }

    @BleLoop private func completeServiceDiscovery(_ wanted: [BluetoothUUID], error: BleError?,
                                                   completion: (@BleLoop (Result<[Service], BleError>) -> Void)? = nil) {
        let all = currentServices()
        let found = wanted.isEmpty ? all : all.filter { wanted.contains($0.uuid) }
        resolvedServices = found
        emit { $0.peripheral(self, didDiscoverServices: error) }
        completion?(error.map { .failure($0) } ?? .success(found))
    }

    @BleLoop func recheckServiceWaits() {
        for wait in serviceWaits where missingServices(wait.wanted).isEmpty {
            wait.timer?.cancel()
            serviceWaits.removeAll { $0 === wait }
            completeServiceDiscovery(wait.wanted, error: nil, completion: wait.completion)
        }
    }

    @BleLoop func failServiceWaits(_ error: BleError) {
        let waits = serviceWaits
        serviceWaits.removeAll()
        for wait in waits {
            wait.timer?.cancel()
            emit { $0.peripheral(self, didDiscoverServices: error) }
            wait.completion?(.failure(error))
        }
    }

    @BleLoop func characteristics(of service: Service) -> [Characteristic] {
        guard let cache else { return [] }
        return cache.children(of: service.path, with: BlueZ.gattCharacteristic).compactMap { path in
            if let known = characteristicsByPath[path] { return known }
            guard let properties = cache.properties(path, BlueZ.gattCharacteristic),
                  let uuid = properties[BlueZ.GattCharacteristic1.uuid].flatMap(BluetoothUUID.init) else { return nil }
            let characteristic = Characteristic(path: path, uuid: uuid,
                                                properties: CharacteristicProperties(bluezFlags: properties[BlueZ.GattCharacteristic1.flags] ?? []),
                                                offersAcquireNotify: BlueZ.GattCharacteristic1.notifyAcquired.isPresent(in: properties),
                                                offersAcquireWrite: BlueZ.GattCharacteristic1.writeAcquired.isPresent(in: properties), service: service)
            characteristic.cachedValue = properties[BlueZ.GattCharacteristic1.value]
            characteristicsByPath[path] = characteristic
            return characteristic
        }
    }

    /// Returns what the delegates hear, for BleAsync's per-call answer.
    @discardableResult
    @BleLoop package func performDiscoverCharacteristics(_ uuids: [BluetoothUUID]?, for service: Service) -> Result<[Characteristic], BleError> {
        guard isLinkUp else {
            emit { $0.peripheral(self, didDiscoverCharacteristicsFor: service, error: BleError.peripheralNotConnected) }
            return .failure(.peripheralNotConnected)
        }
        guard servicesByPath[service.path] === service else {
            emit { $0.peripheral(self, didDiscoverCharacteristicsFor: service, error: BleError.attributeGone) }
            return .failure(.attributeGone)
        }
        let all = characteristics(of: service)
        let found = uuids.map { wanted in all.filter { wanted.contains($0.uuid) } } ?? all
        service.discoveredCharacteristics = found
        emit { $0.peripheral(self, didDiscoverCharacteristicsFor: service, error: nil) }
        return .success(found)
    }

    /// Returns what the delegates hear, for BleAsync's per-call answer.
    @discardableResult
    @BleLoop package func performDiscoverIncludedServices(_ uuids: [BluetoothUUID]?, for service: Service) -> Result<[Service], BleError> {
        guard isLinkUp else {
            emit { $0.peripheral(self, didDiscoverIncludedServicesFor: service, error: BleError.peripheralNotConnected) }
            return .failure(.peripheralNotConnected)
        }
        guard let cache, servicesByPath[service.path] === service else {
            emit { $0.peripheral(self, didDiscoverIncludedServicesFor: service, error: BleError.attributeGone) }
            return .failure(.attributeGone)
        }
        let includedPaths = cache.properties(service.path, BlueZ.gattService)?[BlueZ.GattService1.includes] ?? []
        let known = Dictionary(currentServices().map { ($0.path, $0) }, uniquingKeysWith: { first, _ in first })
        // A path bluetoothd lists but has not exported (or removed since) is left out, not invented.
        let all = includedPaths.compactMap { known[$0] }
        let found = uuids.map { wanted in all.filter { wanted.contains($0.uuid) } } ?? all
        service.includedPaths = includedPaths
        service.discoveredIncludedServices = found
        emit { $0.peripheral(self, didDiscoverIncludedServicesFor: service, error: nil) }
        return .success(found)
    }

    /// Returns what the delegates hear, for BleAsync's per-call answer.
    @discardableResult
    @BleLoop package func performDiscoverDescriptors(for characteristic: Characteristic) -> Result<[Descriptor], BleError> {
        guard isLinkUp else {
            emit { $0.peripheral(self, didDiscoverDescriptorsFor: characteristic, error: BleError.peripheralNotConnected) }
            return .failure(.peripheralNotConnected)
        }
        guard let cache, characteristicsByPath[characteristic.path] === characteristic else {
            emit { $0.peripheral(self, didDiscoverDescriptorsFor: characteristic, error: BleError.attributeGone) }
            return .failure(.attributeGone)
        }
        let found: [Descriptor] = cache.children(of: characteristic.path, with: BlueZ.gattDescriptor).compactMap { path in
            if let known = descriptorsByPath[path] { return known }
            guard let uuid = cache.properties(path, BlueZ.gattDescriptor)?[BlueZ.GattDescriptor1.uuid].flatMap(BluetoothUUID.init) else { return nil }
            let descriptor = Descriptor(path: path, uuid: uuid, owner: characteristic)
            descriptorsByPath[path] = descriptor
            return descriptor
        }
        characteristic.discoveredDescriptors = found
        emit { $0.peripheral(self, didDiscoverDescriptorsFor: characteristic, error: nil) }
        return .success(found)
    }

    /// Returns what the delegates hear, for BleAsync's per-call answer.
    @discardableResult
    @BleLoop package func performReadRSSI() -> Result<Int, BleError> {
        if let rssi = deviceProperties?[BlueZ.Device1.rssi] {
            emit { $0.peripheral(self, didReadRSSI: Int(rssi), error: nil) }
            return .success(Int(rssi))
        } else {
            emit { $0.peripheral(self, didReadRSSI: 0, error: BleError.notAvailable) }
            return .failure(.notAvailable)
        }
    }
}
