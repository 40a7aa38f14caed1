import BleCore
import Foundation

/// `blekit notify ADDRESS CHARACTERISTIC`: prints notifications until interrupted.
enum NotifyCommand: BlekitCommand {
    static let name = "notify"
    static let synopsis = "ADDRESS CHARACTERISTIC"
    static let summary = "print a characteristic's notifications until Ctrl-C"
    static let options: [OptionSpec] = [
        .value("--count", "N", "stop after N notifications"),
        .value("--duration", "SECONDS", "stop after this long (default: until interrupted)"),
        .value("--service", "SERVICE", "the service, when several have the characteristic"),
    ] + ConnectedDevice.options
    static let details = """
    Ctrl-C (SIGINT) or SIGTERM unsubscribes and disconnects before exiting with status 0; a
    link lost on the way exits with status 6; with --count and --duration, fewer than N
    notifications within the duration exits with status 7.
    Example: blekit notify HR-Strap "Heart Rate Measurement" --count 5
    """

    @MainActor
    static func run(_ invocation: Invocation) async -> ExitCode {
        guard invocation.positionals.count == 2 else { return invocation.usage("wants ADDRESS and CHARACTERISTIC", help: help) }
        let count: Int?
        let duration: Double?
        do {
            count = try invocation.arguments.integer("--count", in: 1...Int.max)
            duration = invocation.arguments.has("--duration") ? try invocation.arguments.seconds("--duration", default: 0) : nil
        } catch {
            return invocation.usage(error.description, help: help)
        }
        do throws(CLIError) {
            let device = try await ConnectedDevice.open(invocation, target: invocation.positionals[0])
            let characteristic: Characteristic
            do throws(CLIError) {
                characteristic = try device.characteristic(invocation.positionals[1], service: invocation.arguments.value("--service"))
                guard characteristic.properties.contains(.notify) || characteristic.properties.contains(.indicate) else {
                    throw CLIError("\(Names.label(characteristic.uuid, .characteristic)) does not notify (its flags: \(Names.flags(characteristic.properties).joined(separator: ", "))).\(characteristic.properties.contains(.read) ? " Try `blekit read`." : "")")
                }
                try await device.session.setNotify(true, characteristic, on: device.peripheral, seconds: device.seconds)
            } catch {
                await device.close()
                throw error
            }
            if !invocation.global.json {
                invocation.out("notifications from \(Names.label(characteristic.uuid, .characteristic)) on \(device.peripheral.address)\(count == nil && duration == nil ? " (Ctrl-C to stop)" : "")")
            }
            let outcome = await receive(device, characteristic, count: count, duration: duration, invocation: invocation)
            if outcome.status != .deviceNotFound {
                try? await device.session.setNotify(false, characteristic, on: device.peripheral, seconds: 5)
            }
            await device.close()
            if let message = outcome.message { invocation.fail(message) }
            if !invocation.global.json { invocation.out("\(outcome.received) notification(s)\(outcome.reason)") }
            return outcome.status
        } catch {
            return invocation.fail(error)
        }
    }

    private struct Outcome {
        var received = 0
        var reason = ""
        var status = ExitCode.success
        var message: String?
    }

    @MainActor
    private static func receive(_ device: ConnectedDevice, _ characteristic: Characteristic, count: Int?, duration: Double?, invocation: Invocation) async -> Outcome {
        var outcome = Outcome()
        let start = Date()
        let end = duration.map { start.addingTimeInterval($0) } ?? .distantFuture
        while count.map({ outcome.received < $0 }) ?? true {
            guard let event = await device.session.inbox.next(before: end) else {
                outcome.reason = ", \(CentralSession.format(duration ?? 0)) s passed"
                if let count, outcome.received < count {
                    // --count N is what was asked for: fewer is not a success.
                    outcome.status = .timeout
                    outcome.message = "only \(outcome.received) of \(count) notification(s) came within --duration \(CentralSession.format(duration ?? 0)) s"
                }
                return outcome
            }
            switch event {
            case .interrupted:
                outcome.reason = ", interrupted"
                return outcome
            case .valueUpdated(let updated, let value, let error) where updated === characteristic:
                if let error {
                    outcome.status = .failure
                    outcome.message = "a notification failed: \(CentralSession.describe(error))"
                    return outcome
                }
                outcome.received += 1
                let data = value ?? Data()
                if invocation.global.json {
                    invocation.json(["characteristic": characteristic.uuid.uuidString, "hex": Hex.compact(data),
                                     "seconds": (Date().timeIntervalSince(start) * 1000).rounded() / 1000])
                } else {
                    invocation.out(String(format: "[%7.3f s] ", Date().timeIntervalSince(start)) + ConnectedDevice.describe(data, characteristic: characteristic.uuid))
                }
            case .disconnected(let gone, let error) where gone === device.peripheral:
                outcome.status = .deviceNotFound
                outcome.message = "\(gone.address) disconnected (\(error.map { CentralSession.describe($0) } ?? "the link dropped")). Reconnect and run again."
                outcome.reason = ", link lost"
                return outcome
            default:
                continue
            }
        }
        return outcome
    }
}
