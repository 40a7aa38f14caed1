import BleSim
import BleTestSupport
import Foundation
import Testing

/// Failures say what to do and end with the documented exit status.
@Suite(.serialized) struct ErrorAndUsageTests {
    @Test func helpListsCommandsExitStatusesAndGlobalOptions() async throws {
        let run = try await CLIRun.run(["--help"])
        #expect(run.status == 0)
        for expected in ["scan", "info", "gatt", "read", "write", "notify", "sim", "demo", "--adapter NAME", "--bus BUS", "--json",
                         "6  the device was not found or went away", "BLEKIT_LOG"] {
            #expect(run.output.contains(expected), "missing \(expected): \(run.transcript)")
        }
        let version = try await CLIRun.run(["--version"])
        #expect(version.status == 0 && version.output.hasPrefix("blekit "), "\(version.transcript)")
        let commandHelp = try await CLIRun.run(["write", "--help"])
        #expect(commandHelp.status == 0 && commandHelp.output.contains("usage: blekit write ADDRESS CHARACTERISTIC VALUE") && commandHelp.output.contains("--without-response"), "\(commandHelp.transcript)")
    }

    @Test func badCommandLinesExitWithStatus2() async throws {
        let unknown = try await CLIRun.run(["frobnicate"])
        #expect(unknown.status == 2 && unknown.errors.contains("unknown command 'frobnicate'"), "\(unknown.transcript)")
        let option = try await CLIRun.run(["scan", "--frob"])
        #expect(option.status == 2 && option.errors.contains("unknown option --frob"), "\(option.transcript)")
        let missing = try await CLIRun.run(["read", "C0:FF:EE:00:00:01"])
        #expect(missing.status == 2 && missing.errors.contains("wants ADDRESS and CHARACTERISTIC"), "\(missing.transcript)")
        let bus = try await CLIRun.run(["scan", "--bus", "nonsense"])
        #expect(bus.status == 2 && bus.errors.contains("--bus wants system, session or a D-Bus address"), "\(bus.transcript)")
        let timeout = try await CLIRun.run(["scan", "--timeout", "soon"])
        #expect(timeout.status == 2 && timeout.errors.contains("--timeout wants a number of seconds"), "\(timeout.transcript)")
    }

    /// Issue 25: seconds become a `Duration` (and an `Int` in messages), which trap past about
    /// 1e20 s; `pair --timeout 1e300` crashed. The bus is unreachable, so a number let through
    /// would end with status 3 instead.
    @Test func aTimeoutPastThirtyYearsIsAUsageError() async throws {
        for command in [["scan"], ["pair", "C0:FF:EE:00:00:01"], ["info", "C0:FF:EE:00:00:01"]] {
            let run = try await CLIRun.run(command + ["--timeout", "1e300", "--bus", "unix:path=/nonexistent/blekit-test.sock"])
            #expect(run.status == 2 && run.errors.contains("--timeout wants a number of seconds from 0 to 1000000000 (about 31 years), not '1e300'"),
                    "\(run.transcript)")
        }
    }

    @Test func noBusAndNoBluetoothdSayWhatToDo() async throws {
        let noBus = try await CLIRun.run(["scan", "--bus", "unix:path=/nonexistent/blekit-test.sock"])
        #expect(noBus.status == 3 && noBus.errors.contains("blekit scan: Cannot reach the D-Bus system bus"), "\(noBus.transcript)")
        // A bus with no bluetoothd on it.
        let bus = try await PrivateBus.start()
        defer { bus.stop() }
        let noDaemon = try await CLIRun.run(["scan", "--bus", bus.address])
        #expect(noDaemon.status == 3 && noDaemon.errors.contains("bluetoothd is not running") && noDaemon.errors.contains("systemctl start bluetooth"), "\(noDaemon.transcript)")
    }

    @Test func poweredOffAndNoAdapterAndNoPermission() async throws {
        let off = try await SimulatedRoom.start(#"{"adapters": [{"name": "hci0", "address": "00:AA:01:00:00:00", "powered": false}], "peripherals": []}"#)
        let poweredOff = try await off.blekit(["scan", "--timeout", "1"])
        await off.stop()
        #expect(poweredOff.status == 4 && poweredOff.errors.contains("powered off") && poweredOff.errors.contains("bluetoothctl power on"), "\(poweredOff.transcript)")

        let none = try await SimulatedRoom.start(#"{"adapters": [], "peripherals": []}"#)
        let noAdapter = try await none.blekit(["scan", "--timeout", "1"])
        await none.stop()
        #expect(noAdapter.status == 3 && noAdapter.errors.contains("there is no Bluetooth adapter"), "\(noAdapter.transcript)")

        let room = try await SimulatedRoom.start(Rooms.heartRate)
        let missingAdapter = try await room.blekit(["scan", "--timeout", "1", "--adapter", "hci7"])
        #expect(missingAdapter.status == 3 && missingAdapter.errors.contains("no Bluetooth adapter 'hci7'"), "\(missingAdapter.transcript)")
        await room.simulator.faults.denyAccessToEveryone()
        let denied = try await room.blekit(["scan", "--timeout", "1"])
        await room.stop()
        #expect(denied.status == 5 && denied.errors.contains("usermod -aG bluetooth"), "\(denied.transcript)")
    }

    @Test func deviceGoneDuringNotify() async throws {
        let room = try await SimulatedRoom.start(Rooms.heartRate)
        defer { Task { await room.stop() } }
        let running = try RunningCLI(["notify", "HR-Strap", "2a37", "--bus", room.bus.address])
        #expect(await running.line()?.contains("notifications from 2A37") == true)
        #expect(await running.line()?.contains("72 bpm") == true)
        await room.simulator.peripheral("C0:FF:EE:00:00:02")?.dropLinks()
        let result = await running.stop(with: 0)
        #expect(result.status == 6 && result.errors.contains("disconnected") && result.errors.contains("Reconnect and run again"), "\(result.transcript)")
    }
}

/// `BLEKIT_LOG` with a value that is not a level says so, and logging stays at warning.
@Suite struct LogEnvironmentTests {
    @Test func anInvalidBLEKIT_LOGSaysSo() async throws {
        var environment = CLIRun.environment
        environment["BLEKIT_LOG"] = "verbose"
        let run = try await CLIRun.run(["scan", "--bus", "unix:path=/nonexistent/blekit-log.sock"], environment: environment)
        #expect(run.errors.contains("BLEKIT_LOG='verbose' is not a log level; use error, warning, info, debug or trace"), "\(run.transcript)")
        environment["BLEKIT_LOG"] = "debug"
        let debug = try await CLIRun.run(["scan", "--bus", "unix:path=/nonexistent/blekit-log.sock"], environment: environment)
        #expect(!debug.errors.contains("is not a log level"), "\(debug.transcript)")
    }
}
