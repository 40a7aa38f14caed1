import BleCore
import Foundation

/// `blekit write ADDRESS CHARACTERISTIC VALUE`: one write, hex or text, with or without response.
enum WriteCommand: BlekitCommand {
    static let name = "write"
    static let synopsis = "ADDRESS CHARACTERISTIC VALUE"
    static let summary = "write hex (01ff, \"01 ff\") or --text to a characteristic"
    static let options: [OptionSpec] = [
        .flag("--text", "VALUE is UTF-8 text, not hex"),
        .flag("--without-response", "write without response (the default is with response when the characteristic allows it)"),
        .value("--service", "SERVICE", "the service, when several have the characteristic"),
    ] + ConnectedDevice.options
    static let details = """
    With a response, blekit waits for the device's answer and fails with the ATT error if it
    refused. Without a response there is no answer: blekit waits until the packet has left BleKit
    for BlueZ, and fails if BleKit refused it (longer than the link carries: see the message).
    Example: blekit write LED-Status ff01 01
    """

    @MainActor
    static func run(_ invocation: Invocation) async -> ExitCode {
        guard invocation.positionals.count == 3 else { return invocation.usage("wants ADDRESS, CHARACTERISTIC and VALUE", help: help) }
        let valueText = invocation.positionals[2]
        let value: Data
        if invocation.arguments.has("--text") {
            value = Data(valueText.utf8)
        } else {
            guard let parsed = Hex.parse(valueText) else {
                return invocation.usage("'\(valueText)' is not hex (write 01ff, \"01 ff\" or 0x01ff; --text sends text)", help: help)
            }
            value = parsed
        }
        do throws(CLIError) {
            let device = try await ConnectedDevice.open(invocation, target: invocation.positionals[0])
            let characteristic = try device.characteristic(invocation.positionals[1], service: invocation.arguments.value("--service"))
            let properties = characteristic.properties
            let withResponse: Bool
            if invocation.arguments.has("--without-response") {
                guard properties.contains(.writeWithoutResponse) else {
                    await device.close()
                    throw CLIError("\(Names.label(characteristic.uuid, .characteristic)) does not accept writes without response (its flags: \(Names.flags(properties).joined(separator: ", "))); drop --without-response.")
                }
                withResponse = false
            } else if properties.contains(.write) {
                withResponse = true
            } else if properties.contains(.writeWithoutResponse) {
                withResponse = false
            } else {
                await device.close()
                throw CLIError("\(Names.label(characteristic.uuid, .characteristic)) cannot be written (its flags: \(Names.flags(properties).joined(separator: ", "))).")
            }
            do throws(CLIError) {
                try await device.session.write(value, to: characteristic, on: device.peripheral, withResponse: withResponse, seconds: device.seconds)
            } catch {
                await device.close()
                throw error
            }
            if invocation.global.json {
                invocation.json(["address": device.peripheral.address, "characteristic": characteristic.uuid.uuidString, "hex": Hex.compact(value),
                                 "bytes": value.count, "withResponse": withResponse])
            } else {
                invocation.out("wrote \(value.count) byte(s) to \(Names.label(characteristic.uuid, .characteristic)) \(withResponse ? "with response (acknowledged)" : "without response (handed to BlueZ; the device does not acknowledge these)")")
            }
            await device.close()
            return .success
        } catch {
            return invocation.fail(error)
        }
    }
}
