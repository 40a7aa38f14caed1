import BleCore
import BleDBus
import BleDSL
import BleSim
import BleTestSupport
import Foundation
import Testing

/// A command answered with one packet (the LED's state).
struct SinglePacketCommand: PeripheralOperationCommand {
    var cmdData: Data
    var timeOutInterval: TimeInterval = 10
    func checkResponse(_ dataGroup: [Data], data: Data) -> CheckResponseResult { .success(data: dataGroup + [data]) }
}

@BleLoop
@Test func theLEDPeripheralWrittenWithTheServerDSLSwitchesAndAnswersItsState() async throws {
    let fixture = try await SimulatorFixture.start()
    defer { fixture.tearDown() }
    let led = LEDPeripheral(options: PeripheralManagerOptions(bus: .address(fixture.bus.address)))
    defer { led.server.manager.close() }
    let serverEvents = EventRecorder<String>()
    led.server.onEvent = { event in serverEvents.appendFromAnyThread("\(event)") }
    try await serverEvents.wait("advertising", timeout: .seconds(10)) { $0.contains("advertising") }

    let central = CentralStack(busAddress: fixture.bus.address, service: LEDPeripheral.service,
                               write: LEDPeripheral.control, read: LEDPeripheral.status)
    defer { central.tearDown() }
    try await central.connect(name: "LED")
    #expect(try await central.run(SinglePacketCommand(cmdData: Data([0x01]))).get() == [Data([0x01])])
    #expect(led.isOn)
    #expect(try await central.run(SinglePacketCommand(cmdData: Data([0x00]))).get() == [Data([0x00])])
    #expect(!led.isOn)
    #expect(try await central.run(SinglePacketCommand(cmdData: Data([0x07]))).get() == [Data([0xEE])])
    #expect(serverEvents.events.contains { $0.hasPrefix("centralConnected") })
}

@BleLoop
@Test func theChatPeripheralWrittenWithTheServerDSLReceivesAMessageAndAnswersInSeveralPackets() async throws {
    let fixture = try await SimulatorFixture.start()
    defer { fixture.tearDown() }
    let chat = ChatPeripheral(options: PeripheralManagerOptions(bus: .address(fixture.bus.address)), packetLength: 20)
    defer { chat.server.manager.close() }
    let serverEvents = EventRecorder<String>()
    chat.server.onEvent = { event in serverEvents.appendFromAnyThread("\(event)") }
    let reply = String(repeating: "0123456789", count: 9)
    var received: [String] = []
    // Weak: the chat keeps this closure, and a strong capture kept the chat, its server and
    // the server's bus connection alive until the process ended.
    chat.onMessage = { [weak chat] message in
        received.append(message)
        chat?.send(reply)
    }
    try await serverEvents.wait("advertising", timeout: .seconds(10)) { $0.contains("advertising") }

    let central = CentralStack(busAddress: fixture.bus.address)
    defer { central.tearDown() }
    try await central.connect(name: "Chat")
    let packets = try await central.run(CollectCommand(cmdData: Data("hello".utf8), packets: 5)).get()
    #expect(received == ["hello"])
    #expect(packets.map(\.count) == [20, 20, 20, 20, 10])
    #expect(String(decoding: packets.reduce(Data(), +), as: UTF8.self) == reply)
}

/// The examples stay small: the bar is under 40 lines each.
@Test func theLEDAndChatPeripheralsAreUnderFortyLines() throws {
    let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Examples")
    for name in ["LEDPeripheral.swift", "ChatPeripheral.swift"] {
        let text = try String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: true)
        #expect(lines.count < 40, "\(name) has \(lines.count) lines")
    }
}
