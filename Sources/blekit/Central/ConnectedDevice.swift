import BleAssignedNumbers
import BleCore
import Foundation

/// The common start of `gatt`, `read`, `write` and `notify`: find the device, connect,
/// discover its GATT tree, and look characteristics up by UUID or name.
@MainActor
struct ConnectedDevice {
    let session: CentralSession
    let peripheral: Peripheral
    let services: [Service]
    /// The per-operation deadline.
    let seconds: Double
    /// False when another program had the device connected already: BlueZ shares one link
    /// among its clients, so disconnecting would cut theirs too.
    let ownsConnection: Bool

    /// The options every device command has.
    nonisolated static let options: [OptionSpec] = [
        .value("--timeout", "SECONDS", "how long to look for the device, and to wait for each answer (default 10)"),
    ]

    /// Finds `target` (an address or advertised name), connects and discovers everything.
    static func open(_ invocation: Invocation, target: String) async throws(CLIError) -> ConnectedDevice {
        let seconds: Double
        do { seconds = try invocation.arguments.seconds("--timeout", default: 10) } catch { throw CLIError(error.description, .usage) }
        let session = try await CentralSession.open(invocation)
        do {
            let peripheral = try await session.find(target, seconds: seconds)
            let wasConnected = session.manager.retrieveConnectedPeripherals(withServices: []).contains { $0.address == peripheral.address }
            try await session.connect(peripheral, seconds: max(seconds, 5))
            let services = try await session.discoverAll(peripheral, seconds: seconds)
            return ConnectedDevice(session: session, peripheral: peripheral, services: services, seconds: seconds, ownsConnection: !wasConnected)
        } catch {
            session.close()
            throw error
        }
    }

    /// The characteristic with this UUID or name, in `service` when given.
    func characteristic(_ text: String, service serviceText: String?) throws(CLIError) -> Characteristic {
        let uuid = try Names.parseUUID(text, .characteristic)
        let serviceUUID = try serviceText.map { text throws(CLIError) in try Names.parseUUID(text, .service) }
        let candidates = services.filter { serviceUUID == nil || $0.uuid == serviceUUID }
            .flatMap { $0.characteristics ?? [] }
            .filter { $0.uuid == uuid }
        switch candidates.count {
        case 1: return candidates[0]
        case 0:
            let available = services.flatMap { $0.characteristics ?? [] }.map { Names.label($0.uuid, .characteristic) }
            throw CLIError("\(peripheral.address) has no characteristic \(Names.label(uuid, .characteristic))\(serviceUUID.map { " in service \($0)" } ?? ""). It has: \(available.isEmpty ? "none" : available.joined(separator: ", ")). `blekit gatt \(peripheral.address)` shows the tree.")
        default:
            throw CLIError("\(peripheral.address) has \(candidates.count) characteristics \(uuid); say which service with --service.", .usage)
        }
    }

    /// Disconnects (unless the link was another program's) and releases the central.
    func close() async {
        if ownsConnection { await session.disconnect(peripheral) }
        session.close()
    }

    /// A value as the CLI prints it: hex, the text when printable, the decoded standard value.
    static func describe(_ value: Data, characteristic uuid: BluetoothUUID) -> String {
        var line = Hex.spaced(value)
        if value.isEmpty { line = "(empty)" }
        if let decoded = StandardValue.describe(characteristic: uuid.uuidString128, value: Array(value)) {
            line += "  (\(decoded))"
        } else if let text = Hex.printable(value) {
            line += "  \"\(text)\""
        }
        return line
    }
}
