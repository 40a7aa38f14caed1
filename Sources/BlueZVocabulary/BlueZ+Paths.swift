import BleDBus

extension BlueZ {
    /// bluetoothd's object-path scheme: `/org/bluez/hciN`, `…/dev_AA_BB_CC_DD_EE_FF`,
    /// `…/serviceXXXX`, `…/charYYYY`, `…/descZZZZ` (attribute handles in four lower-case hex digits).
    public enum Paths {
        /// Where a path sits in the scheme, with the parts it was built from.
        public enum Kind: Equatable, Sendable {
            /// `/org/bluez/hciN`.
            case adapter(name: String)
            /// `…/dev_…`, with the address in `AA:BB:CC:DD:EE:FF` form.
            case device(adapter: String, address: String)
            /// `…/serviceXXXX`.
            case service(adapter: String, address: String, service: UInt16)
            /// `…/charYYYY`.
            case characteristic(adapter: String, address: String, service: UInt16, characteristic: UInt16)
            /// `…/descZZZZ`.
            case descriptor(adapter: String, address: String, service: UInt16, characteristic: UInt16, descriptor: UInt16)
        }

        /// What a device's path element starts with, before its address: `dev_`.
        public static let deviceElementPrefix = "dev_"

        /// `/org/bluez/<name>`, or nil when `name` is not a path element (`hci0` is).
        public static func adapter(named name: String) -> ObjectPath? {
            try? rootPath.appending(name)
        }

        /// `/org/bluez/hci<index>`.
        public static func adapter(index: Int) -> ObjectPath {
            // hci and decimal digits always form a valid element.
            validated(rootPath.rawValue + "/hci" + String(index.magnitude))
        }

        /// `dev_AA_BB_CC_DD_EE_FF` for `AA:BB:CC:DD:EE:FF` (any case), or nil when it is not an address.
        public static func deviceElement(address: String) -> String? {
            guard isAddress(address) else { return nil }
            return deviceElementPrefix + address.uppercased().replacingOccurrences(of: ":", with: "_")
        }

        /// The address (`AA:BB:CC:DD:EE:FF`) a `dev_…` element names, or nil for another element.
        public static func address(fromDeviceElement element: String) -> String? {
            guard element.hasPrefix(deviceElementPrefix) else { return nil }
            let address = element.dropFirst(deviceElementPrefix.count).replacingOccurrences(of: "_", with: ":")
            return isAddress(address) ? address : nil
        }

        /// The device object for `address` below `adapter`, or nil when it is not an address.
        public static func device(adapter: ObjectPath, address: String) -> ObjectPath? {
            deviceElement(address: address).flatMap { try? adapter.appending($0) }
        }

        /// `serviceXXXX` below a device.
        public static func service(device: ObjectPath, handle: UInt16) -> ObjectPath {
            validated(device.rawValue + "/service" + hex(handle))
        }

        /// `charYYYY` below a service.
        public static func characteristic(service: ObjectPath, handle: UInt16) -> ObjectPath {
            validated(service.rawValue + "/char" + hex(handle))
        }

        /// `descZZZZ` below a characteristic.
        public static func descriptor(characteristic: ObjectPath, handle: UInt16) -> ObjectPath {
            validated(characteristic.rawValue + "/desc" + hex(handle))
        }

        /// The device path `path` is or lies below, or nil when it is not in a device's subtree.
        public static func devicePath(containing path: ObjectPath) -> ObjectPath? {
            guard let kind = kind(of: path) else { return nil }
            switch kind {
            case .adapter: return nil
            case .device(let adapter, let address), .service(let adapter, let address, _),
                 .characteristic(let adapter, let address, _, _), .descriptor(let adapter, let address, _, _, _):
                return adapterPath(adapter).flatMap { device(adapter: $0, address: address) }
            }
        }

        /// Parses a path of the scheme; nil for any other path (bad input is never a trap).
        public static func kind(of path: ObjectPath) -> Kind? {
            let prefix = rootPath.rawValue + "/"
            guard path.rawValue.hasPrefix(prefix) else { return nil }
            let elements = path.rawValue.dropFirst(prefix.count).split(separator: "/", omittingEmptySubsequences: false).map(String.init)
            guard let adapter = elements.first, adapter.hasPrefix("hci"), adapter.count > 3,
                  adapter.dropFirst(3).allSatisfy(\.isNumber) else { return nil }
            if elements.count == 1 { return .adapter(name: adapter) }
            guard let address = address(fromDeviceElement: elements[1]) else { return nil }
            if elements.count == 2 { return .device(adapter: adapter, address: address) }
            guard let service = handle(elements[2], prefix: "service") else { return nil }
            if elements.count == 3 { return .service(adapter: adapter, address: address, service: service) }
            guard let characteristic = handle(elements[3], prefix: "char") else { return nil }
            if elements.count == 4 {
                return .characteristic(adapter: adapter, address: address, service: service, characteristic: characteristic)
            }
            guard elements.count == 5, let descriptor = handle(elements[4], prefix: "desc") else { return nil }
            return .descriptor(adapter: adapter, address: address, service: service, characteristic: characteristic,
                               descriptor: descriptor)
        }

        /// `AA:BB:CC:DD:EE:FF`, any case.
        public static func isAddress(_ text: String) -> Bool {
            let parts = text.split(separator: ":", omittingEmptySubsequences: false)
            return parts.count == 6 && parts.allSatisfy { $0.count == 2 && UInt8($0, radix: 16) != nil }
        }

        /// A handle as bluetoothd writes it in paths: four lower-case hex digits.
        public static func hex(_ handle: UInt16) -> String {
            let digits = String(handle, radix: 16)
            return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
        }

        private static func handle(_ element: String, prefix: String) -> UInt16? {
            guard element.hasPrefix(prefix) else { return nil }
            let digits = element.dropFirst(prefix.count)
            guard digits.count == 4 else { return nil }
            return UInt16(digits, radix: 16)
        }

        private static func adapterPath(_ name: String) -> ObjectPath? { adapter(named: name) }

        /// For texts assembled from a valid path and elements of letters and hex digits only,
        /// which are valid by construction.
        private static func validated(_ text: String) -> ObjectPath {
            ObjectPath(stringLiteral: text)
        }
    }
}
