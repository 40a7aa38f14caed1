import BleAssignedNumbers
import BleCore
import Foundation

/// `blekit gatt ADDRESS`: the service → characteristic → descriptor tree with flags and names.
enum GattCommand: BlekitCommand {
    static let name = "gatt"
    static let synopsis = "ADDRESS"
    static let summary = "connect and print the GATT tree: services, characteristics, descriptors, flags, names"
    static let options: [OptionSpec] = [
        .flag("--values", "also read every readable characteristic and descriptor"),
    ] + ConnectedDevice.options
    static let details = """
    Example: blekit gatt HR-Strap --values
    """

    @MainActor
    static func run(_ invocation: Invocation) async -> ExitCode {
        guard invocation.positionals.count == 1 else { return invocation.usage("wants one ADDRESS", help: help) }
        let readValues = invocation.arguments.has("--values")
        do throws(CLIError) {
            let device = try await ConnectedDevice.open(invocation, target: invocation.positionals[0])
            var failures: [String] = []
            var lines: [String] = ["\(device.peripheral.address)\(device.peripheral.name.map { " \($0)" } ?? "")"]
            var servicesJSON: [[String: Any]] = []
            for (serviceIndex, service) in device.services.enumerated() {
                let lastService = serviceIndex == device.services.count - 1
                lines.append("\(lastService ? "└─" : "├─") service \(Names.label(service.uuid, .service))\(service.isPrimary ? "" : " (secondary)")")
                let servicePrefix = lastService ? "   " : "│  "
                let characteristics = service.characteristics ?? []
                var characteristicsJSON: [[String: Any]] = []
                for (index, characteristic) in characteristics.enumerated() {
                    let last = index == characteristics.count - 1
                    var line = "\(servicePrefix)\(last ? "└─" : "├─") characteristic \(Names.label(characteristic.uuid, .characteristic)) [\(Names.flags(characteristic.properties).joined(separator: ", "))]"
                    var characteristicJSON: [String: Any] = ["uuid": characteristic.uuid.uuidString, "flags": Names.flags(characteristic.properties)]
                    characteristicJSON["name"] = Names.name(characteristic.uuid, .characteristic)
                    if readValues && characteristic.properties.contains(.read) {
                        do {
                            let value = try await device.session.read(characteristic, on: device.peripheral, seconds: device.seconds)
                            line += " = " + ConnectedDevice.describe(value, characteristic: characteristic.uuid)
                            characteristicJSON["hex"] = Hex.compact(value)
                        } catch {
                            failures.append(error.message)
                            line += " = (read failed: \(error.message))"
                            characteristicJSON["error"] = error.message
                        }
                    }
                    lines.append(line)
                    let characteristicPrefix = servicePrefix + (last ? "   " : "│  ")
                    let descriptors = characteristic.descriptors ?? []
                    var descriptorsJSON: [[String: Any]] = []
                    for (descriptorIndex, descriptor) in descriptors.enumerated() {
                        var descriptorLine = "\(characteristicPrefix)\(descriptorIndex == descriptors.count - 1 ? "└─" : "├─") descriptor \(Names.label(descriptor.uuid, .descriptor))"
                        var descriptorJSON: [String: Any] = ["uuid": descriptor.uuid.uuidString]
                        descriptorJSON["name"] = Names.name(descriptor.uuid, .descriptor)
                        if readValues {
                            do {
                                let bytes = try await device.session.read(descriptor, on: device.peripheral, seconds: device.seconds) ?? Data()
                                descriptorLine += " = " + (StandardValue.describe(descriptor: descriptor.uuid.uuidString128, value: Array(bytes)) ?? Hex.spaced(bytes))
                                descriptorJSON["hex"] = Hex.compact(bytes)
                            } catch {
                                failures.append(error.message)
                                descriptorLine += " = (read failed: \(error.message))"
                                descriptorJSON["error"] = error.message
                            }
                        }
                        lines.append(descriptorLine)
                        descriptorsJSON.append(descriptorJSON)
                    }
                    characteristicJSON["descriptors"] = descriptorsJSON
                    characteristicsJSON.append(characteristicJSON)
                }
                var serviceJSON: [String: Any] = ["uuid": service.uuid.uuidString, "primary": service.isPrimary, "characteristics": characteristicsJSON]
                serviceJSON["name"] = Names.name(service.uuid, .service)
                servicesJSON.append(serviceJSON)
            }
            let counts = "\(device.services.count) service(s), \(device.services.reduce(0) { $0 + ($1.characteristics?.count ?? 0) }) characteristic(s)"
            if invocation.global.json {
                invocation.json(["address": device.peripheral.address, "identifier": device.peripheral.identifier.uuidString,
                                 "name": device.peripheral.name ?? "", "services": servicesJSON])
            } else {
                lines.forEach(invocation.out)
                invocation.out(counts + (failures.isEmpty ? "" : ", \(failures.count) read(s) failed"))
            }
            await device.close()
            // The tree printed, but --values asked for every value: each one missing is said on
            // standard error too, where scripts (and --json users) look for failures.
            failures.forEach(invocation.fail)
            return failures.isEmpty ? .success : .failure
        } catch {
            return invocation.fail(error)
        }
    }
}
