import BlueZVocabulary
import Foundation
/// A GATT database with ATT handles assigned the way a typical peripheral lays it out: GAP at
/// 0x0001 (never exported by bluetoothd), the GATT service at 0x0008, then the peripheral's own
/// services in order. Characteristic objects are named after their declaration handle.
public struct GattLayout: Sendable, Equatable {
    /// A service with its handle range start.
    public struct Service: Sendable, Equatable {
        /// The service declaration handle.
        public var handle: UInt16
        /// Full 128-bit UUID text.
        public var uuid: String
        /// Primary or secondary.
        public var primary: Bool
        /// Its characteristics.
        public var characteristics: [Characteristic]
        /// The declaration handles of the services it includes, in its Include declarations'
        /// order.
        public var includes: [UInt16] = []
    }

    /// A characteristic.
    public struct Characteristic: Sendable, Equatable {
        /// The declaration handle (names the D-Bus object).
        public var handle: UInt16
        /// The value handle.
        public var valueHandle: UInt16
        /// Full 128-bit UUID text.
        public var uuid: String
        /// BlueZ flag names.
        public var flags: [String]
        /// The initial value.
        public var initialValue: [UInt8]
        /// Its descriptors.
        public var descriptors: [Descriptor]

        /// True when `flag` is set.
        public func has(_ flag: String) -> Bool { flags.contains(flag) }

        /// The server lets a client read it: bluetoothd grants read permission for `read` and
        /// its security variants (`encrypt-read`, `secure-read`, …).
        public var isReadable: Bool { has(BlueZ.GattFlag.read) || flags.contains { $0.hasSuffix("-read") } }

        /// The server lets a client write it, by request or command alike: bluetoothd grants one
        /// write permission for every write flag, whatever the operation.
        public var isWritable: Bool {
            has(BlueZ.GattFlag.write) || has(BlueZ.GattFlag.writeWithoutResponse) || has(BlueZ.GattFlag.reliableWrite) || flags.contains { $0.hasSuffix("-write") }
        }
    }

    /// A descriptor.
    public struct Descriptor: Sendable, Equatable {
        /// Its handle.
        public var handle: UInt16
        /// Full 128-bit UUID text.
        public var uuid: String
        /// Flag names.
        public var flags: [String]
        /// The initial value.
        public var initialValue: [UInt8]
    }

    /// The exported services (GAP excluded).
    public var services: [Service]

    /// The Client Characteristic Configuration descriptor UUID.
    public static let cccdUUID = "00002902-0000-1000-8000-00805f9b34fb"
    static let gapServiceUUID = "00001800-0000-1000-8000-00805f9b34fb"
    static let gattServiceUUID = "00001801-0000-1000-8000-00805f9b34fb"
    static let serviceChangedUUID = "00002a05-0000-1000-8000-00805f9b34fb"

    /// The services a peripheral's own stack serves before the application's.
    public enum DaemonServices: Sendable {
        /// GATT with Service Changed only: a typical peripheral's firmware.
        case minimal
        /// What bluetoothd 5.66 serves for its applications (observed: GATT at 0x0008 with
        /// Service Changed, Client and Server Supported Features and the Database Hash; Device
        /// Information with the PnP ID at 0x0012; the application from 0x0015).
        case bluetoothdServer

        var services: [ServiceSpec] {
            let serviceChanged = CharacteristicSpec(uuid: GattLayout.serviceChangedUUID, flags: [BlueZ.GattFlag.indicate])
            switch self {
            case .minimal:
                return [ServiceSpec(uuid: GattLayout.gattServiceUUID, characteristics: [serviceChanged])]
            case .bluetoothdServer:
                return [
                    ServiceSpec(uuid: GattLayout.gattServiceUUID, characteristics: [
                        serviceChanged,
                        CharacteristicSpec(uuid: "2b29", flags: [BlueZ.GattFlag.read, BlueZ.GattFlag.write], value: Data([0x00])),
                        CharacteristicSpec(uuid: "2b2a", flags: [BlueZ.GattFlag.read], value: Data(repeating: 0, count: 16)),
                        CharacteristicSpec(uuid: "2b3a", flags: [BlueZ.GattFlag.read], value: Data([0x01])),
                    ]),
                    // bluetoothd's default DeviceID: USB, Linux Foundation (0x1d6b), BlueZ, 5.66.
                    ServiceSpec(uuid: "180a", characteristics: [
                        CharacteristicSpec(uuid: "2a50", flags: [BlueZ.GattFlag.read], value: Data([0x02, 0x6b, 0x1d, 0x46, 0x02, 0x42, 0x05])),
                    ]),
                ]
            }
        }
    }

    /// How many of `services` the peripheral's own stack serves (they come first).
    public let daemonServiceCount: Int

    /// The value of a characteristic the stack itself serves at `handle` (nil: not one of those).
    func daemonValue(handle: UInt16) -> Data? {
        for service in services.prefix(daemonServiceCount) {
            for characteristic in service.characteristics where characteristic.valueHandle == handle {
                return Data(characteristic.initialValue)
            }
        }
        return nil
    }

    /// Lays out `specs`; UUIDs are normalised to full 128-bit text (invalid ones are kept as
    /// given, lower-cased, so a Swift-built spec with a typo still shows up to be noticed).
    public init(specs: [ServiceSpec], daemon: DaemonServices = .minimal) {
        var services: [Service] = []
        var next: UInt16 = 0x0008
        func take() -> UInt16 {
            let handle = next
            next &+= 1
            return handle
        }
        let daemonCount = daemon.services.count
        daemonServiceCount = daemonCount
        let all = daemon.services + specs
        // Includes name services by their index among `specs`; their handles are known once
        // every service is laid out (a peripheral's firmware may include a later service).
        var includedIndices: [[Int]] = []
        for (index, spec) in all.enumerated() {
            var service = Service(handle: take(), uuid: SimUUID.full(spec.uuid) ?? spec.uuid.lowercased(),
                                  primary: spec.primary, characteristics: [])
            let own = index - daemonCount
            let targets = own < 0 ? [] : spec.includes.enumerated().compactMap { position, include in
                try? include.target(position: position, of: own, in: specs).get()
            }
            includedIndices.append(targets.map { $0 + daemonCount })
            // One Include declaration each, right after the service declaration (bluetoothd's
            // server adds them before the characteristics).
            for _ in targets { _ = take() }
            for characteristicSpec in spec.characteristics {
                var characteristic = Characteristic(
                    handle: take(), valueHandle: take(),
                    uuid: SimUUID.full(characteristicSpec.uuid) ?? characteristicSpec.uuid.lowercased(),
                    flags: characteristicSpec.flags, initialValue: Array(characteristicSpec.value), descriptors: [])
                let wantsCCCD = characteristicSpec.flags.contains(BlueZ.GattFlag.notify) || characteristicSpec.flags.contains(BlueZ.GattFlag.indicate)
                var descriptorSpecs = characteristicSpec.descriptors
                if wantsCCCD, !descriptorSpecs.contains(where: { SimUUID.full($0.uuid) == GattLayout.cccdUUID }) {
                    descriptorSpecs.insert(DescriptorSpec(uuid: GattLayout.cccdUUID, flags: [BlueZ.GattFlag.read, BlueZ.GattFlag.write], value: .init([0, 0])), at: 0)
                }
                for descriptorSpec in descriptorSpecs {
                    characteristic.descriptors.append(Descriptor(
                        handle: take(), uuid: SimUUID.full(descriptorSpec.uuid) ?? descriptorSpec.uuid.lowercased(),
                        flags: descriptorSpec.flags, initialValue: Array(descriptorSpec.value)))
                }
                service.characteristics.append(characteristic)
            }
            // Handles bluetoothd reserved for includes it could not make end the range unused.
            let unmade = spec.unresolvedIncludes + spec.includes.count - targets.count
            for _ in 0..<max(0, unmade) { _ = take() }
            services.append(service)
        }
        for (index, targets) in includedIndices.enumerated() {
            services[index].includes = targets.map { services[$0].handle }
        }
        self.services = services
    }

    /// The characteristic whose value handle or declaration handle is `handle`.
    public func characteristic(handle: UInt16) -> Characteristic? {
        for service in services {
            for characteristic in service.characteristics where characteristic.valueHandle == handle || characteristic.handle == handle {
                return characteristic
            }
        }
        return nil
    }

    /// The first characteristic with `uuid` (any UUID form).
    public func characteristic(uuid: String) -> Characteristic? {
        let wanted = SimUUID.full(uuid) ?? uuid.lowercased()
        for service in services {
            if let found = service.characteristics.first(where: { $0.uuid == wanted }) { return found }
        }
        return nil
    }

    /// The service UUIDs, for the device's `UUIDs` property.
    public var serviceUUIDs: [String] { services.map(\.uuid) }
}
