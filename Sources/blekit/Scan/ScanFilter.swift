import BleAssignedNumbers
import BleCore

/// `blekit scan`'s filters: all given ones must match.
struct ScanFilter {
    /// Advertised services, any of which must be present.
    var services: [BluetoothUUID] = []
    /// The start of the name.
    var namePrefix: String?
    /// The weakest RSSI shown, in dBm.
    var minimumRSSI: Int?
    /// Company identifiers, any of which must be in the manufacturer data.
    var manufacturers: Set<UInt16>?

    /// Reads the filters from the command line.
    init(_ arguments: ParsedArguments) throws(CLIError) {
        services = try arguments.all("--service").map { text throws(CLIError) in try Names.parseUUID(text, .service) }
        namePrefix = arguments.value("--name")
        if let text = arguments.value("--rssi") {
            guard let value = Int(text), value <= 20, value >= -127 else { throw CLIError("--rssi wants dBm such as -70, not '\(text)'", .usage) }
            minimumRSSI = value
        }
        let manufacturerTexts = arguments.all("--manufacturer")
        if !manufacturerTexts.isEmpty {
            var identifiers = Set<UInt16>()
            for text in manufacturerTexts {
                let matched = Self.companies(matching: text)
                guard !matched.isEmpty else {
                    throw CLIError("--manufacturer: '\(text)' is neither a company identifier (0x004C, 76) nor part of a company name", .usage)
                }
                identifiers.formUnion(matched)
            }
            manufacturers = identifiers
        }
    }

    /// `0x004C`, `004c` or `76` as an identifier; otherwise every company whose name contains the text.
    static func companies(matching text: String) -> Set<UInt16> {
        let lowered = text.lowercased()
        if lowered.hasPrefix("0x"), let value = UInt16(lowered.dropFirst(2), radix: 16) { return [value] }
        if let value = UInt16(lowered) { return [value] }
        if lowered.count == 4, let value = UInt16(lowered, radix: 16) { return [value] }
        return Set((0...UInt16.max).filter { AssignedNumbers.companyName($0)?.lowercased().contains(lowered) == true })
    }

    /// True when the advertisement passes every filter.
    func accepts(name: String?, rssi: Int, advertisement: AdvertisementData) -> Bool {
        if !services.isEmpty, !services.contains(where: { advertisement.serviceUUIDs.contains($0) || advertisement.serviceData[$0] != nil }) { return false }
        if let namePrefix, !(name ?? "").lowercased().hasPrefix(namePrefix.lowercased()) { return false }
        if let minimumRSSI, rssi < minimumRSSI { return false }
        if let manufacturers, manufacturers.isDisjoint(with: advertisement.manufacturerData.keys) { return false }
        return true
    }
}
