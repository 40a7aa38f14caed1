@testable import BleCore
import BleDBus
import BleSim
import BleTestSupport
import Foundation
import Testing
import BlueZVocabulary

private let emptyOptions = BlueZShapes.propertyDictionary([])

@BleLoop
@Test func staticValuesAndDescriptorsAreServedWithoutACallbackAndCannotBeWritten() async throws {
    let harness = try await PeripheralHarness.start()
    defer { harness.tearDown() }
    let (service, _, _) = PeripheralHarness.chatService()
    try await harness.add(service)
    let advertisement = try await harness.advertise()
    defer { advertisement.cancel() }
    let device = try await harness.connectRawCentral()
    let name = try ObjectPath(device.rawValue + "/service0015/char001b")
    #expect(try await harness.fixture.call(name, "org.bluez.GattCharacteristic1", "ReadValue", [emptyOptions]) == [.bytes(Data("chat".utf8))])
    let offset = BlueZShapes.propertyDictionary([("offset", .uint16(2))])
    #expect(try await harness.fixture.call(name, "org.bluez.GattCharacteristic1", "ReadValue", [offset]) == [.bytes(Data("at".utf8))])
    let description = try ObjectPath(name.rawValue + "/desc001d")
    #expect(try await harness.fixture.call(description, "org.bluez.GattDescriptor1", "ReadValue", [emptyOptions]) == [.bytes(Data("Name".utf8))])
    #expect(harness.recorder.reads.isEmpty, "static values need no delegate")
    // Read-only on the central (bluetoothd refuses the write before it reaches BleKit).
    await #expect(throws: DBusError.self) {
        try await harness.fixture.call(name, "org.bluez.GattCharacteristic1", "WriteValue", [.bytes(Data([1])), emptyOptions])
    }
}

@BleLoop
@Test func dynamicReadsAndLongWritesCarryTheCentralOffsetAndMTU() async throws {
    let harness = try await PeripheralHarness.start()
    defer { harness.tearDown() }
    let (service, _, _) = PeripheralHarness.chatService()
    let full = Data((0..<40).map { UInt8($0) })
    harness.recorder.onRead = { peripheral, request in
        request.value = Data(full.dropFirst(request.offset))
        #expect(peripheral.respond(to: request, withResult: .success))
        #expect(!peripheral.respond(to: request, withResult: .success), "a request is answered once")
    }
    harness.recorder.onWrite = { peripheral, request in
        peripheral.respond(to: request, withResult: request.offset > 100 ? .invalidOffset : .success)
    }
    try await harness.add(service)
    let advertisement = try await harness.advertise()
    defer { advertisement.cancel() }
    let device = try await harness.connectRawCentral()
    let send = try ObjectPath(device.rawValue + "/service0015/char0018")
    let read = try await harness.fixture.call(send, "org.bluez.GattCharacteristic1", "ReadValue",
                                              [BlueZShapes.propertyDictionary([("offset", .uint16(30))])])
    #expect(read == [.bytes(Data(full.dropFirst(30)))])
    let request = try #require(harness.recorder.reads.first)
    #expect(request.offset == 30)
    #expect(request.mtu == 517)
    #expect(request.link == "LE")
    #expect(request.central.address == "00:AA:01:00:00:01")
    #expect(request.central.mtu == 517)

    let receive = try ObjectPath(device.rawValue + "/service0015/char0016")
    try await harness.fixture.call(receive, "org.bluez.GattCharacteristic1", "WriteValue",
                                   [.bytes(Data([7, 8])), BlueZShapes.propertyDictionary([("offset", .uint16(20))])])
    #expect(harness.recorder.writes.last?.offset == 20)
    #expect(harness.recorder.writes.last?.needsResponse == true)
}

@BleLoop
@Test func anUnansweredRequestEndsWithAnATTErrorAtItsDeadline() async throws {
    let harness = try await PeripheralHarness.start(requestTimeout: .milliseconds(200))
    defer { harness.tearDown() }
    let (service, _, _) = PeripheralHarness.chatService()
    try await harness.add(service)
    let advertisement = try await harness.advertise()
    defer { advertisement.cancel() }
    let device = try await harness.connectRawCentral()
    let send = try ObjectPath(device.rawValue + "/service0015/char0018")
    do {
        _ = try await harness.fixture.call(send, "org.bluez.GattCharacteristic1", "ReadValue", [emptyOptions])
        Issue.record("the read succeeded without an answer")
    } catch {
        #expect("\(error)".contains("0x0e"), "\(error)")
    }
    let request = try #require(harness.recorder.reads.first)
    #expect(!harness.manager.respond(to: request, withResult: .success), "the deadline answered it")
}

@BleLoop
@Test func attResultsBecomeTheErrorsBluetoothdTurnsIntoThem() {
    #expect(ATTResult.success.dbusError(isRead: true) == nil)
    #expect(ATTResult.invalidOffset.dbusError(isRead: true)?.name == "org.bluez.Error.InvalidOffset")
    #expect(ATTResult.readNotPermitted.dbusError(isRead: true)?.name == "org.bluez.Error.NotPermitted")
    #expect(ATTResult.insufficientAuthorization.dbusError(isRead: false)?.name == "org.bluez.Error.NotAuthorized")
    #expect(ATTResult.failure(.application(0x85)).dbusError(isRead: false)?.message == "0x85")
    #expect(ATTResult.failure(.insufficientEncryption).dbusError(isRead: false)?.message == "0x0e")
}

@Test func permissionsBecomeBlueZFlags() {
    let plain = MutableCharacteristic(type: BluetoothUUID(UInt16(0xff01)), properties: [.read, .write, .notify], value: nil,
                                      permissions: [.readable, .writeable])
    #expect(plain.bluezFlags == ["read", "write", "notify"])
    let secured = MutableCharacteristic(type: BluetoothUUID(UInt16(0xff02)), properties: [.read, .write, .writeWithoutResponse, .indicate],
                                        value: nil, permissions: [.readEncryptionRequired, .writeAuthenticationRequired])
    #expect(secured.bluezFlags == ["encrypt-read", "write-without-response", "encrypt-authenticated-write", "indicate"])
    let secure = MutableCharacteristic(type: BluetoothUUID(UInt16(0xff03)), properties: [.read], value: nil,
                                       permissions: [.readSecureConnectionsRequired, .authorizationRequired])
    secure.descriptors = [MutableDescriptor.userDescription("x", writable: true)]
    #expect(secure.bluezFlags == ["secure-read", "writable-auxiliaries", "authorize"])
}
