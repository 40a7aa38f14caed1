import BleAssignedNumbers
import BleCore
import Foundation

/// `blekit info ADDRESS`: what the device advertises, without connecting.
enum InfoCommand: BlekitCommand {
    static let name = "info"
    static let synopsis = "ADDRESS"
    static let summary = "what a device advertises: name, RSSI, manufacturer, services, service data"
    static let options: [OptionSpec] = ConnectedDevice.options
    static let details = """
    Does not connect. Example: blekit info C0:FF:EE:00:00:01
    """

    /// BlueZ 5.66 does not export whether an advertisement was connectable, and BleKit's
    /// `isConnectable` is true unless BlueZ says otherwise: printing that as "yes" told a
    /// non-connectable beacon was connectable.
    static func connectableLine(_ advertisement: AdvertisementData) -> String {
        advertisement.isConnectable ? "  Connectable: not reported by BlueZ (`blekit gatt` tries to connect)" : "  Connectable: no"
    }

    @MainActor
    static func run(_ invocation: Invocation) async -> ExitCode {
        guard invocation.positionals.count == 1 else { return invocation.usage("wants one ADDRESS", help: help) }
        do {
            let seconds = try invocation.arguments.seconds("--timeout", default: 10)
            let session = try await CentralSession.open(invocation)
            defer { session.close() }
            let peripheral = try await session.find(invocation.positionals[0], seconds: seconds, connected: false)
            guard let entry = session.known[peripheral.address] else { throw CLIError("\(peripheral.address) vanished", .deviceNotFound) }
            let advertisement = entry.advertisement
            if invocation.global.json {
                var object: [String: Any] = ["address": peripheral.address, "identifier": peripheral.identifier.uuidString, "rssi": entry.rssi,
                                             "state": peripheral.state.description,
                                             "services": advertisement.serviceUUIDs.map(\.uuidString)]
                object["name"] = advertisement.localName ?? peripheral.name
                object["txPower"] = advertisement.txPowerLevel
                // Only a "no" is known: see `connectableLine`.
                if !advertisement.isConnectable { object["connectable"] = false }
                object["manufacturerData"] = Dictionary(uniqueKeysWithValues: advertisement.manufacturerData.map { ("0x" + Names.hex4($0.key), Hex.compact($0.value)) })
                object["serviceData"] = Dictionary(uniqueKeysWithValues: advertisement.serviceData.map { ($0.key.uuidString, Hex.compact($0.value)) })
                invocation.json(object)
                return .success
            }
            var lines = ["Device \(peripheral.address)", "  Identifier: \(peripheral.identifier.uuidString)"]
            lines.append("  Name: \(advertisement.localName ?? peripheral.name ?? "(none)")")
            lines.append("  RSSI: \(entry.rssi) dBm")
            if let power = advertisement.txPowerLevel { lines.append("  TX power: \(power) dBm") }
            lines.append(connectableLine(advertisement))
            lines.append("  State: \(peripheral.state)")
            for (company, bytes) in advertisement.manufacturerData.sorted(by: { $0.key < $1.key }) {
                lines.append("  Manufacturer data: 0x\(Names.hex4(company)) \(Names.company(company)): \(Hex.spaced(bytes))")
            }
            for uuid in advertisement.serviceUUIDs {
                lines.append("  Service: \(Names.label(uuid, .service))")
            }
            for (uuid, bytes) in advertisement.serviceData.sorted(by: { $0.key.uuidString < $1.key.uuidString }) {
                lines.append("  Service data: \(Names.label(uuid, .service)): \(Hex.spaced(bytes))")
            }
            lines.forEach(invocation.out)
            return .success
        } catch let error as CLIError {
            return invocation.fail(error)
        } catch let error as ParsedArguments.UsageError {
            return invocation.usage(error.description, help: help)
        } catch {
            return invocation.fail(CLIError("\(error)"))
        }
    }
}
