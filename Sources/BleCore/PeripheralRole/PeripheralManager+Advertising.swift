import BleDBus
import BlueZVocabulary
import Foundation

/// An advertisement's exported object and its registration state.
@BleLoop
final class AdvertisementRecord {
    let path: ObjectPath
    let advertisement: Advertisement
    /// Weak: the app's handle owns the advertisement; when it goes, the advertisement ends.
    weak var registration: AdvertisementRegistration?
    /// Held for CoreBluetooth's `startAdvertising(_:)`, which returns no handle.
    var registered = false
    var inFlight = false

    init(path: ObjectPath, advertisement: Advertisement, registration: AdvertisementRegistration) {
        self.path = path
        self.advertisement = advertisement
        self.registration = registration
    }
}

/// Advertising: `LEAdvertisement1` objects registered with `LEAdvertisingManager1`.
extension PeripheralManager {
    @BleLoop func beginAdvertisement(_ registration: AdvertisementRegistration) {
        guard !closed, let path = try? ObjectPath(registration.path) else {
            registration.setState(.cancelled)
            return
        }
        guard let connection = session.connection else {
            // Not open yet: try once the session is (open() runs registrationsDue via the cache).
            let record = AdvertisementRecord(path: path, advertisement: registration.advertisement, registration: registration)
            advertisements[path] = record
            return
        }
        let record = AdvertisementRecord(path: path, advertisement: registration.advertisement, registration: registration)
        advertisements[path] = record
        exportAdvertisement(record, on: connection)
        registerAdvertisement(record)
    }

    @BleLoop func exportAdvertisement(_ record: AdvertisementRecord, on connection: Connection) {
        guard !connection.objects.isRegistered(record.path) else { return }
        connection.objects.register(record.path, interfaces: [Self.advertisementInterface(record.advertisement) { [weak self, weak record] in
            // bluetoothd is done with it: its Timeout elapsed (then it is over), or bluetoothd
            // is stopping (then it is registered again when bluetoothd is back).
            guard let self, let record else { return }
            record.registered = false
            if record.advertisement.timeout == nil {
                record.registration?.setState(.registering)
            } else {
                record.registration?.setState(.released)
                if let registration = record.registration { self.emit { $0.peripheralManager(self, advertisementDidUpdate: registration) } }
                self.advertisements.removeValue(forKey: record.path)
                self.session.connection?.objects.unregister(record.path)
            }
        }])
    }

    @BleLoop func registerAdvertisement(_ record: AdvertisementRecord) {
        guard !closed, currentState == .poweredOn, let adapterPath, let connection = session.connection, !record.inFlight else { return }
        guard record.registration != nil else {
            advertisements.removeValue(forKey: record.path)
            return
        }
        exportAdvertisement(record, on: connection)
        record.inFlight = true
        session.call(adapterPath, BlueZ.LEAdvertisingManager1.interface, BlueZ.LEAdvertisingManager1.Method.registerAdvertisement,
                     [.objectPath(record.path), BlueZShapes.propertyDictionary([])]) { [weak self, weak record] result in
            guard let self, let record else { return }
            record.inFlight = false
            guard let registration = record.registration else {
                // Released while on its way: take it back.
                if case .success = result { self.unregisterAdvertisement(record.path) }
                return
            }
            switch result {
            case .success:
                record.registered = true
                registration.setState(.active)
                BleLog.info("advertisement \(record.path) registered on \(adapterPath)")
                self.emit { $0.peripheralManagerDidStartAdvertising(self, error: nil) }
            case .failure(let error):
                BleLog.error("RegisterAdvertisement failed: \(error)")
                registration.setState(.failed(error))
                self.advertisements.removeValue(forKey: record.path)
                self.session.connection?.objects.unregister(record.path)
                self.emit { $0.peripheralManagerDidStartAdvertising(self, error: error) }
            }
            self.emit { $0.peripheralManager(self, advertisementDidUpdate: registration) }
        }
    }

    @BleLoop func endAdvertisement(path: ObjectPath, cancelled: Bool) {
        guard let record = advertisements.removeValue(forKey: path) else { return }
        if cancelled, let registration = record.registration, registration.state != .cancelled {
            registration.setState(.cancelled)
            emit { $0.peripheralManager(self, advertisementDidUpdate: registration) }
        }
        if record.registered { unregisterAdvertisement(path) }
        record.registered = false
        session.connection?.objects.unregister(path)
    }

    @BleLoop func endAdvertisement(path text: String, cancelled: Bool) {
        guard let path = try? ObjectPath(text) else { return }
        endAdvertisement(path: path, cancelled: cancelled)
    }

    @BleLoop private func unregisterAdvertisement(_ path: ObjectPath) {
        guard let adapterPath else { return }
        session.call(adapterPath, BlueZ.LEAdvertisingManager1.interface, BlueZ.LEAdvertisingManager1.Method.unregisterAdvertisement,
                     [.objectPath(path)]) { result in
            if case .failure(let error) = result { BleLog.debug("UnregisterAdvertisement: \(error)") }
        }
    }

    /// `LEAdvertisement1` with the properties that are set (the others are left out of GetAll,
    /// which is how bluetoothd tells "not set").
    nonisolated static func advertisementInterface(_ advertisement: Advertisement, release: @escaping @BleLoop @Sendable () -> Void) -> ExportedInterface {
        typealias Key = BlueZ.LEAdvertisement1
        func uuids(_ list: [BluetoothUUID]) -> DBusValue? {
            list.isEmpty ? nil : .array(element: .string, list.map { .string($0.uuidString128) })
        }
        let manufacturer: DBusValue? = advertisement.manufacturerData.isEmpty ? nil : .dictionary(key: .uint16, value: .variant,
            advertisement.manufacturerData.keys.sorted().map { DBusDictionaryEntry(key: .uint16($0), value: .variant(.bytes(advertisement.manufacturerData[$0] ?? Data()))) })
        let serviceData: DBusValue? = advertisement.serviceData.isEmpty ? nil : .dictionary(key: .string, value: .variant,
            advertisement.serviceData.keys.sorted { $0.uuidString128 < $1.uuidString128 }.map {
                DBusDictionaryEntry(key: .string($0.uuidString128), value: .variant(.bytes(advertisement.serviceData[$0] ?? Data())))
            })
        let data: DBusValue? = advertisement.data.isEmpty ? nil : .dictionary(key: .byte, value: .variant,
            advertisement.data.keys.sorted().map { DBusDictionaryEntry(key: .byte($0), value: .variant(.bytes(advertisement.data[$0] ?? Data()))) })
        let includes = advertisement.includes
        let properties: [ExportedProperty] = [
            ExportedProperty(Key.type) { .string(advertisement.kind.rawValue) },
            ExportedProperty(Key.serviceUUIDs) { uuids(advertisement.serviceUUIDs) },
            ExportedProperty(Key.manufacturerData) { manufacturer },
            ExportedProperty(Key.solicitUUIDs) { uuids(advertisement.solicitUUIDs) },
            ExportedProperty(Key.serviceData) { serviceData },
            ExportedProperty(Key.data) { data },
            ExportedProperty(Key.discoverable) { advertisement.discoverable.map { .boolean($0) } },
            ExportedProperty(Key.discoverableTimeout) { advertisement.discoverableTimeout.map { .uint16($0) } },
            ExportedProperty(Key.includes) { includes.isEmpty ? nil : .array(element: .string, includes.map { .string($0) }) },
            ExportedProperty(Key.localName) { advertisement.localName.map { .string($0) } },
            ExportedProperty(Key.appearance) { advertisement.appearance.map { .uint16($0) } },
            ExportedProperty(Key.duration) { advertisement.duration.map { .uint16($0) } },
            ExportedProperty(Key.timeout) { advertisement.timeout.map { .uint16($0) } },
            ExportedProperty(Key.secondaryChannel) { advertisement.secondaryChannel.map { .string($0) } },
            ExportedProperty(Key.minInterval) { advertisement.minimumInterval.map { .uint32($0) } },
            ExportedProperty(Key.maxInterval) { advertisement.maximumInterval.map { .uint32($0) } },
            ExportedProperty(Key.txPower) { advertisement.txPower.map { .int16($0) } },
        ]
        return ExportedInterface(Key.interface, methods: [
            ExportedMethod(Key.Method.release) { call in
                call.reply()
                release()
            },
        ], properties: properties)
    }
}
