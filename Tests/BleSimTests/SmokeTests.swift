import BleDBus
import BleSim
import BleTestSupport
import Foundation
import Testing
import BlueZVocabulary

@BleLoop
@Test func echoRuleNotifiesWhatWasWritten() async throws {
    let spec = PeripheralSpec(address: "C0:FF:EE:00:00:01", name: "LED", services: [
        ServiceSpec(uuid: "ff00", characteristics: [
            CharacteristicSpec(uuid: "ff01", flags: ["read", "write"], value: Data([0])),
            CharacteristicSpec(uuid: "ff02", flags: ["read", "notify"], value: Data([0])),
        ]),
    ], rules: [BehaviourRule(.write(characteristic: "0000ff01-0000-1000-8000-00805f9b34fb", prefix: nil),
                             [.echo(characteristic: "0000ff02-0000-1000-8000-00805f9b34fb")])])
    let fixture = try await SimulatorFixture.start(peripherals: [spec])
    defer { fixture.tearDown() }
    let device: ObjectPath = "/org/bluez/hci0/dev_C0_FF_EE_00_00_01"
    try await fixture.call("/org/bluez/hci0", "org.bluez.Adapter1", "StartDiscovery")
    try await fixture.waitForSignal { $0.member == "InterfacesAdded" && $0.body.first == .objectPath(device) }
    try await fixture.call(device, "org.bluez.Device1", "Connect")
    try await fixture.waitForProperty(device, "ServicesResolved", .boolean(true))
    let notifyPath = try ObjectPath(device.rawValue + "/service000c/char000f")
    let writePath = try ObjectPath(device.rawValue + "/service000c/char000d")
    try await fixture.call(notifyPath, "org.bluez.GattCharacteristic1", "StartNotify")
    let mark = fixture.mark
    try await fixture.call(writePath, "org.bluez.GattCharacteristic1", "WriteValue", [.bytes(Data([0x42])), BlueZShapes.propertyDictionary([])])
    let notification = try await fixture.waitForSignal(since: mark) { $0.path == notifyPath && $0.member == "PropertiesChanged" }
    #expect(SimulatorFixture.changedValue(notification, "Value") == .bytes(Data([0x42])))
}
