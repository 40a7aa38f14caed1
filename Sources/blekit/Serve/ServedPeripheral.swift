import BleCore
import BleSim
import Foundation

/// A peripheral described in BleSim's scenario format, as `PeripheralManager` services: the
/// characteristics are answered by `blekit serve` (reads from its value store, writes into it),
/// and the scenario's rules (on write, on subscribe, every N ms) run against them.
struct ServedPeripheral {
    let spec: PeripheralSpec
    let services: [MutableService]
    /// The characteristics by their 128-bit UUID string.
    let characteristics: [String: MutableCharacteristic]

    /// Loads a peripheral file (one of BleSim's peripheral objects), or a scenario file (its
    /// first peripheral, or the one named `name`).
    static func load(path: String, name: String?) throws(CLIError) -> ServedPeripheral {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CLIError("cannot read \(path): check the path and that it is readable")
        }
        let parsed: Any
        do {
            parsed = try JSONSerialization.jsonObject(with: data)
        } catch {
            // The parser's own words say where it stopped ("around line 3, column 1").
            var detail = ((error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String) ?? "\(error)"
            while detail.hasSuffix(".") { detail.removeLast() }
            throw CLIError("\(path) is not valid JSON: \(detail). See Scenarios/*.json for the format (a peripheral with services and characteristics)")
        }
        guard var object = parsed as? [String: Any] else {
            throw CLIError("\(path) is not a JSON object; see Scenarios/*.json for the format (a peripheral with services and characteristics)")
        }
        if let peripherals = object["peripherals"] as? [[String: Any]] {
            guard let chosen = peripherals.first(where: { name == nil || $0["name"] as? String == name }) else {
                // Which names there are, so that a misspelt --peripheral is fixed at once.
                let names = peripherals.compactMap { $0["name"] as? String }.map { "'\($0)'" }
                throw CLIError("\(path) has no peripheral\(name.map { " named '\($0)'" } ?? "")"
                               + (names.isEmpty ? "" : "; its peripherals are named \(names.joined(separator: ", "))"))
            }
            object = chosen
        }
        // The address is the adapter's, whatever the file says.
        if object["address"] == nil { object["address"] = "00:00:00:00:00:00" }
        let spec: PeripheralSpec
        do {
            let normalized = try JSONSerialization.data(withJSONObject: object)
            spec = try JSONDecoder().decode(PeripheralSpec.self, from: normalized)
        } catch {
            throw CLIError("\(path) is not a peripheral in BleSim's format: \(error)")
        }
        guard !spec.services.isEmpty else { throw CLIError("\(path): the peripheral has no services to serve") }
        var services: [MutableService] = []
        var characteristics: [String: MutableCharacteristic] = [:]
        for serviceSpec in spec.services {
            guard let serviceUUID = BluetoothUUID(serviceSpec.uuid) else { throw CLIError("\(path): '\(serviceSpec.uuid)' is not a UUID") }
            let service = MutableService(type: serviceUUID, primary: serviceSpec.primary)
            var members: [MutableCharacteristic] = []
            for characteristicSpec in serviceSpec.characteristics {
                guard let uuid = BluetoothUUID(characteristicSpec.uuid) else { throw CLIError("\(path): '\(characteristicSpec.uuid)' is not a UUID") }
                let properties = CharacteristicProperties(bluezFlags: characteristicSpec.flags)
                var permissions: AttributePermissions = []
                if properties.contains(.read) { permissions.insert(.readable) }
                if properties.contains(.write) || properties.contains(.writeWithoutResponse) { permissions.insert(.writeable) }
                // No static value: every read comes to us, so a written value reads back.
                let characteristic = MutableCharacteristic(type: uuid, properties: properties, value: nil, permissions: permissions)
                characteristic.descriptors = characteristicSpec.descriptors.compactMap { descriptor in
                    guard let descriptorUUID = BluetoothUUID(descriptor.uuid), descriptorUUID != BluetoothUUID(UInt16(0x2902)) else { return nil }
                    return MutableDescriptor(type: descriptorUUID, value: descriptor.value)
                }
                members.append(characteristic)
                characteristics[uuid.uuidString128] = characteristic
            }
            service.characteristics = members
            services.append(service)
        }
        return ServedPeripheral(spec: spec, services: services, characteristics: characteristics)
    }

    /// The characteristic a rule names.
    func characteristic(_ text: String) -> MutableCharacteristic? {
        BluetoothUUID(text).flatMap { characteristics[$0.uuidString128] }
    }

    /// The advertisement: the file's name, advertised services (all served ones when it lists
    /// none) and manufacturer data.
    var advertisement: Advertisement {
        let listed = spec.serviceUUIDs.compactMap { BluetoothUUID($0) }
        var advertisement = Advertisement(localName: spec.name, serviceUUIDs: listed.isEmpty ? services.filter(\.isPrimary).map(\.uuid) : listed)
        advertisement.manufacturerData = spec.manufacturerData
        return advertisement
    }

    /// The initial values, by 128-bit UUID string.
    var initialValues: [String: Data] {
        var values: [String: Data] = [:]
        for service in spec.services {
            for characteristic in service.characteristics {
                if let uuid = BluetoothUUID(characteristic.uuid) { values[uuid.uuidString128] = characteristic.value }
            }
        }
        return values
    }
}
