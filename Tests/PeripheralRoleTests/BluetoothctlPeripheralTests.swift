import BleCore
import BleDBus
import BleSim
import BleTestSupport
import Foundation
import Testing

/// Debian's bluetoothctl 5.66, an outside BlueZ client, on hci1 against a `PeripheralManager`
/// serving on hci0 through BleSim: it sees the advertisement, reads, writes and subscribes.
@BleLoop
@Test func bluetoothctlSeesTheAdvertisementAndReadsWritesAndSubscribes() async throws {
    let bluetoothctl = "/usr/bin/bluetoothctl"
    #expect(FileManager.default.isExecutableFile(atPath: bluetoothctl), "Debian's bluez package provides bluetoothctl")
    let harness = try await PeripheralHarness.start()
    defer { harness.tearDown() }
    let (service, _, send) = PeripheralHarness.chatService()
    harness.recorder.onRead = { peripheral, request in
        request.value = Data("hi".utf8)
        peripheral.respond(to: request, withResult: .success)
    }
    harness.recorder.onWrite = { peripheral, request in peripheral.respond(to: request, withResult: .success) }
    try await harness.add(service)
    let advertisement = try await harness.advertise()
    defer { advertisement.cancel() }

    let process = try Subprocess([bluetoothctl], environment: harness.fixture.bus.environment)
    var cursor = 0
    func expect(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        guard let end = await process.waitFor(text, from: cursor, timeout: 10) else {
            Issue.record("bluetoothctl did not print \"\(text)\"; its output:\n\(process.text)", sourceLocation: sourceLocation)
            throw PeripheralTestError.missing(text)
        }
        cursor = end
    }
    func run(_ command: String, expecting reply: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        process.send(command)
        try await expect(reply, sourceLocation: sourceLocation)
    }
    defer { process.send("quit") }
    try await expect("Agent registered")
    // The default controller is hci0, which advertises and does not hear itself: scan from hci1.
    try await run("select 00:AA:01:00:00:01", expecting: "Controller 00:AA:01:00:00:01 BleSim [default]")
    try await run("scan on", expecting: "[NEW] Device 00:AA:01:00:00:00 chat-periph")
    try await run("scan off", expecting: "Discovery stopped")
    try await run("info 00:AA:01:00:00:00", expecting: "UUID: Vendor specific")
    try await expect("12345678-1234-1234-1234-1234567890ab")
    try await run("connect 00:AA:01:00:00:00", expecting: "Connection successful")
    try await expect("ServicesResolved: yes")
    try await run("menu gatt", expecting: "Menu gatt:")
    let device = "/org/bluez/hci1/dev_00_AA_01_00_00_00/service0015"
    try await run("select-attribute \(device)/char001b", expecting: "/service0015/char001b]#")
    try await run("read", expecting: "63 68 61 74")
    try await run("select-attribute \(device)/char0018", expecting: "/service0015/char0018]#")
    try await run("read", expecting: "68 69")
    try await run("notify on", expecting: "Notify started")
    try await harness.recorder.events.wait("subscribed", timeout: .seconds(10)) { $0.contains { $0.hasPrefix("subscribed") } }
    #expect(harness.manager.updateValue(Data([0x5a, 0x5b]), for: send, onSubscribedCentrals: nil))
    try await expect("[CHG] Attribute \(device)/char0018 Value:")
    try await expect("5a 5b")
    try await run("notify off", expecting: "Notify stopped")
    try await run("select-attribute \(device)/char0016", expecting: "/service0015/char0016]#")
    try await run("write \"0x41 0x42\"", expecting: "Attempting to write")
    try await harness.recorder.events.wait("the write", timeout: .seconds(10)) { $0.contains("write \(Chat.receive) 4142") }
    process.send("quit")
    await process.finish()
}
