import BleAssignedNumbers
import BleCore
import Foundation

/// `blekit read ADDRESS CHARACTERISTIC`: one read, printed as hex, text and decoded value.
enum ReadCommand: BlekitCommand {
    static let name = "read"
    static let synopsis = "ADDRESS CHARACTERISTIC"
    static let summary = "read a characteristic (by UUID or name) and print its value"
    static let options: [OptionSpec] = [
        .value("--service", "SERVICE", "the service, when several have the characteristic"),
    ] + ConnectedDevice.options
    static let details = """
    ADDRESS is the device's address, its BleKit identifier (`scan --json`) or its name (the
    advertised one is remembered, so it still works after BlueZ renamed the device on connecting);
    the same goes for gatt, write, notify, info and pair. CHARACTERISTIC is a UUID (2a19) or a SIG
    name ("Battery Level"). Prints `UUID Name: hex  (decoded)`; standard values (battery level,
    heart rate, PnP ID, Device Information strings) are decoded.
    Example: blekit read C0:FF:EE:00:00:02 "Battery Level"
    """

    @MainActor
    static func run(_ invocation: Invocation) async -> ExitCode {
        guard invocation.positionals.count == 2 else { return invocation.usage("wants ADDRESS and CHARACTERISTIC", help: help) }
        do throws(CLIError) {
            let device = try await ConnectedDevice.open(invocation, target: invocation.positionals[0])
            let characteristic: Characteristic
            let value: Data
            do throws(CLIError) {
                characteristic = try device.characteristic(invocation.positionals[1], service: invocation.arguments.value("--service"))
                guard characteristic.properties.contains(.read) else {
                    throw CLIError("\(Names.label(characteristic.uuid, .characteristic)) cannot be read (its flags: \(Names.flags(characteristic.properties).joined(separator: ", "))).\(characteristic.properties.contains(.notify) ? " Try `blekit notify`." : "")")
                }
                value = try await device.session.read(characteristic, on: device.peripheral, seconds: device.seconds)
            } catch {
                await device.close()
                throw error
            }
            if invocation.global.json {
                var object: [String: Any] = ["address": device.peripheral.address, "characteristic": characteristic.uuid.uuidString, "hex": Hex.compact(value)]
                object["name"] = Names.name(characteristic.uuid, .characteristic)
                object["text"] = Hex.printable(value)
                object["value"] = StandardValue.describe(characteristic: characteristic.uuid.uuidString128, value: Array(value))
                invocation.json(object)
            } else {
                invocation.out("\(Names.label(characteristic.uuid, .characteristic)): \(ConnectedDevice.describe(value, characteristic: characteristic.uuid))")
            }
            await device.close()
            return .success
        } catch {
            return invocation.fail(error)
        }
    }
}
