import BleDBus
import BleSim
import BleTestSupport
import Foundation
import Testing

/// Debian's bluetoothctl 5.66, a real BlueZ client, against BleSim on a private bus: commands
/// go in on stdin, each one when the previous step's text appeared (deadline-bound).
///
/// bluetoothctl prints GATT attribute changes only for the attribute chosen with
/// `select-attribute` (client/main.c, `property_changed`: `proxy == default_attr`), so a
/// notification shows as "[CHG] Attribute … Value:" only while the notifying characteristic is
/// the selected one. A write selected on another characteristic hides the notification it
/// triggers; BleSim emits it all the same (see the last test).
struct BluetoothctlTests {
    static let bluetoothctl = "/usr/bin/bluetoothctl"

    /// A bluetoothctl session on the fixture's bus.
    final class Session: @unchecked Sendable {
        let process: Subprocess
        /// Where the next wait starts looking (just past the last match).
        private(set) var cursor = 0

        init(bus: PrivateBus) throws {
            process = try Subprocess([BluetoothctlTests.bluetoothctl], environment: bus.environment)
        }

        /// Waits for `text` after the cursor and moves the cursor past it.
        func expect(_ text: String, timeout: Double = 10, sourceLocation: SourceLocation = #_sourceLocation) async throws {
            guard let end = await process.waitFor(text, from: cursor, timeout: timeout) else {
                Issue.record("bluetoothctl did not print \"\(text)\"; its output:\n\(process.text)", sourceLocation: sourceLocation)
                throw FixtureError.unexpected(text)
            }
            cursor = end
        }

        /// Sends a command, then waits for `reply`.
        func run(_ command: String, expecting reply: String, timeout: Double = 10,
                 sourceLocation: SourceLocation = #_sourceLocation) async throws {
            process.send(command)
            try await expect(reply, timeout: timeout, sourceLocation: sourceLocation)
        }

        /// The output printed since `offset`.
        func output(since offset: Int) -> String { String(process.text.dropFirst(offset)) }

        func quit() async {
            process.send("quit")
            await process.finish()
        }
    }

    /// Starts bluetoothctl and waits until it sees the daemon (its agent is registered).
    @BleLoop
    static func session(_ fixture: SimulatorFixture) async throws -> Session {
        #expect(FileManager.default.isExecutableFile(atPath: bluetoothctl), "Debian's bluez package provides bluetoothctl")
        let session = try Session(bus: fixture.bus)
        try await session.expect("Agent registered")
        return session
    }

    /// Scans, connects, and enters the GATT menu.
    @BleLoop
    static func connected(_ session: Session, _ address: String) async throws {
        try await session.run("scan on", expecting: "[NEW] Device \(address)")
        try await session.run("scan off", expecting: "Discovery stopped")
        try await session.run("connect \(address)", expecting: "Connection successful")
        try await session.expect("ServicesResolved: yes")
        try await session.run("menu gatt", expecting: "Menu gatt:")
    }

    @BleLoop
    @Test func bluetoothctlListsAndShowsTheControllers() async throws {
        let fixture = try await SimulatorFixture.start(peripherals: [Golden.spec()])
        defer { fixture.tearDown() }
        let session = try await BluetoothctlTests.session(fixture)
        try await session.run("list", expecting: "Controller 00:AA:01:00:00:00 BleSim [default]")
        try await session.expect("Controller 00:AA:01:00:00:01 BleSim")
        let before = session.cursor
        // The advertising features come last: waiting for an earlier line could read the
        // output before bluetoothctl printed them.
        try await session.run("show", expecting: "SupportedInstances: 0x05 (5)")
        let show = session.output(since: before)
        #expect(show.contains("Roles: peripheral"))
        #expect(show.contains("Controller 00:AA:01:00:00:00 (public)"))
        #expect(show.contains("Powered: yes"))
        #expect(show.contains("Discovering: no"))
        #expect(show.contains("Modalias: usb:v1D6Bp0246d0542"))
        #expect(show.contains("SupportedInstances: 0x05 (5)"))
        await session.quit()
    }

    @BleLoop
    @Test func bluetoothctlScansAndShowsTheDeviceWithItsNameAndRSSI() async throws {
        let fixture = try await SimulatorFixture.start(peripherals: [Golden.spec()])
        defer { fixture.tearDown() }
        let session = try await BluetoothctlTests.session(fixture)
        try await session.run("scan on", expecting: "Discovering: yes")
        try await session.expect("[NEW] Device \(Golden.address) \(Golden.name)")
        try await session.run("devices", expecting: "Device \(Golden.address) \(Golden.name)")
        let before = session.cursor
        try await session.run("info \(Golden.address)", expecting: "RSSI: -50")
        let info = session.output(since: before)
        #expect(info.contains("Name: \(Golden.name)"))
        #expect(info.contains("Connected: no"))
        #expect(info.contains("ManufacturerData Key: 0xffff"))
        #expect(info.contains("ServiceData Key: \(uuid128("1234"))"))
        try await session.run("scan off", expecting: "Discovery stopped")
        try await session.expect("RSSI is nil")
        try await session.expect("Discovering: no")
        await session.quit()
    }

    @BleLoop
    @Test func bluetoothctlConnectsAndListsTheGattAttributes() async throws {
        let fixture = try await SimulatorFixture.start(peripherals: [Golden.spec()])
        defer { fixture.tearDown() }
        let device = SimulatorFixture.devicePath(Golden.address)
        let session = try await BluetoothctlTests.session(fixture)
        try await BluetoothctlTests.connected(session, Golden.address)
        let before = session.cursor
        try await session.run("list-attributes \(Golden.address)", expecting: "\(device.rawValue)/service000c/char001c/desc001e")
        let attributes = session.output(since: before)
        #expect(attributes.contains("Primary Service (Handle 0x0000)\n\t\(device.rawValue)/service0008\n\t\(uuid128("1801"))\n\tGeneric Attribute Profile"))
        #expect(attributes.contains("\(device.rawValue)/service0008/char0009\n\t\(uuid128("2a05"))\n\tService Changed"))
        #expect(attributes.contains("\(device.rawValue)/service000c\n\t\(Golden.service)"))
        #expect(attributes.contains("\(device.rawValue)/service000c/char0013/desc0015\n\t\(Golden.cccd)\n\tClient Characteristic Configuration"))
        #expect(!attributes.contains(uuid128("1800")), "GAP is not exported")
        try await session.run("back", expecting: "Menu main:")
        try await session.run("disconnect \(Golden.address)", expecting: "Successful disconnected")
        try await session.expect("Connected: no")
        await session.quit()
    }

    @BleLoop
    @Test func bluetoothctlReadsAndWritesTheSelectedAttribute() async throws {
        let fixture = try await SimulatorFixture.start(peripherals: [Golden.spec()])
        defer { fixture.tearDown() }
        let rw = SimulatorFixture.devicePath(Golden.address).rawValue + "/service000c/char000d"
        let session = try await BluetoothctlTests.session(fixture)
        try await BluetoothctlTests.connected(session, Golden.address)
        try await session.run("select-attribute \(rw)", expecting: "[\(Golden.gapName):/service000c/char000d]#")
        // "0123456789" as bluetoothctl's hex dump.
        try await session.run("read", expecting: "30 31 32 33 34 35 36 37 38 39")
        try await session.run("write 0x42", expecting: "Attempting to write \(rw)")
        // The write reached the peripheral (a later read comes back with it).
        try await session.run("read", expecting: "Attempting to read \(rw)")
        try await session.expect("  42 ")
        #expect(fixture.simulator.peripheral(Golden.address)?.value(of: Golden.rw) == Data([0x42]))
        await session.quit()
    }

    @BleLoop
    @Test func bluetoothctlPrintsANotificationOfTheSelectedCharacteristic() async throws {
        let fixture = try await SimulatorFixture.start(peripherals: [Golden.spec()])
        defer { fixture.tearDown() }
        let device = SimulatorFixture.devicePath(Golden.address)
        let notify = device.rawValue + "/service000c/char0013"
        let session = try await BluetoothctlTests.session(fixture)
        try await BluetoothctlTests.connected(session, Golden.address)
        try await session.run("select-attribute \(notify)", expecting: "/service000c/char0013]#")
        try await session.run("notify on", expecting: "Notify started")
        // Another client writes `rw`; the peripheral echoes it as a notification on `notify`.
        try await fixture.call(try ObjectPath(device.rawValue + "/service000c/char000d"), Interface.characteristic, "WriteValue",
                               [.bytes(Data([0x43])), options()])
        try await session.expect("[CHG] Attribute \(notify) Value:")
        try await session.expect("  43 ")
        try await session.run("notify off", expecting: "Notify stopped")
        await session.quit()
    }

    @BleLoop
    @Test func bluetoothctlReceivesNotificationsOverAcquireNotify() async throws {
        let fixture = try await SimulatorFixture.start(peripherals: [Golden.spec()])
        defer { fixture.tearDown() }
        let combo = SimulatorFixture.devicePath(Golden.address).rawValue + "/service000c/char0019"
        let session = try await BluetoothctlTests.session(fixture)
        try await BluetoothctlTests.connected(session, Golden.address)
        try await session.run("select-attribute \(combo)", expecting: "/service000c/char0019]#")
        try await session.run("acquire-notify", expecting: "AcquireNotify success")
        fixture.simulator.peripheral(Golden.address)?.notify(Golden.combo, value: Data([0x5a, 0x5b]))
        try await session.expect("5a 5b")
        try await session.run("release-notify", expecting: "NotifyAcquired: no")
        await session.quit()
    }

    @BleLoop
    @Test func bluetoothctlPrintsAttributeChangesOnlyForTheSelectedAttribute() async throws {
        // Why a manual try "lost" a notification: the write was made with the written
        // characteristic selected. BleSim sent the notification; bluetoothctl did not print it.
        let fixture = try await SimulatorFixture.start(peripherals: [Golden.spec()])
        defer { fixture.tearDown() }
        let device = SimulatorFixture.devicePath(Golden.address)
        let notify = device.rawValue + "/service000c/char0013"
        let rw = device.rawValue + "/service000c/char000d"
        let session = try await BluetoothctlTests.session(fixture)
        try await BluetoothctlTests.connected(session, Golden.address)
        try await session.run("select-attribute \(notify)", expecting: "/service000c/char0013]#")
        try await session.run("notify on", expecting: "Notify started")
        try await session.run("select-attribute \(rw)", expecting: "/service000c/char000d]#")
        let before = session.cursor
        let since = fixture.mark
        try await session.run("write 0x44", expecting: "Attempting to write \(rw)")
        // The notification went out on the bus...
        try await fixture.waitForSignal(since: since) { $0.changes(try! ObjectPath(notify), "Value", to: .bytes(Data([0x44]))) }
        // ...and a later command's output follows it, without the notification in between.
        try await session.run("read", expecting: "Attempting to read \(rw)")
        try await session.expect("  44 ")
        #expect(!session.output(since: before).contains("[CHG] Attribute \(notify) Value"))
        await session.quit()
    }
}
