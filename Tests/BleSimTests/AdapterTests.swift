import BleDBus
import BleSim
import BleTestSupport
import Foundation
import Testing
import BlueZVocabulary

/// bluez-observed.md § a. adapter: the objects, property order and types, Set/Get behaviour
/// and the properties errors, error names and messages exactly.
struct AdapterTests {
    @BleLoop
    @Test func orgBluezExportsTheManagersWithEmptyPropertyDictionaries() async throws {
        let fixture = try await SimulatorFixture.start()
        defer { fixture.tearDown() }
        let objects = try await fixture.managedObjects()
        let bluez = try #require(objects["/org/bluez"])
        #expect(Set(bluez.keys) == [Interface.introspectable, "org.bluez.AgentManager1", "org.bluez.ProfileManager1",
                                    "org.bluez.HealthManager1"])
        #expect(bluez.values.allSatisfy { $0.isEmpty })
    }

    @BleLoop
    @Test func adapterExportsItsInterfacesInBluetoothdOrder() async throws {
        let fixture = try await SimulatorFixture.start()
        defer { fixture.tearDown() }
        let reply = try await fixture.call(.root, Interface.objectManager, "GetManagedObjects")
        guard case .dictionary(_, _, let entries) = reply[0],
              let adapter = entries.first(where: { $0.key == .objectPath(SimulatorFixture.hci0) }),
              case .dictionary(_, _, let interfaces) = adapter.value else {
            Issue.record("no hci0 in GetManagedObjects")
            return
        }
        let names = interfaces.compactMap { if case .string(let name) = $0.key { return name } else { return nil } }
        #expect(names == [Interface.introspectable, Interface.adapter, Interface.properties, "org.bluez.GattManager1",
                          "org.bluez.Media1", "org.bluez.NetworkServer1", "org.bluez.LEAdvertisingManager1"])
    }

    @BleLoop
    @Test func adapterPropertiesComeInBluetoothdOrderWithTheirTypes() async throws {
        let fixture = try await SimulatorFixture.start()
        defer { fixture.tearDown() }
        let reply = try await fixture.call(SimulatorFixture.hci0, Interface.properties, "GetAll", [.string(Interface.adapter)])
        guard case .dictionary(_, _, let entries) = reply[0] else { Issue.record("GetAll is not a{sv}"); return }
        let names = entries.compactMap { if case .string(let name) = $0.key { return name } else { return nil } }
        #expect(names == ["Address", "AddressType", "Name", "Alias", "Class", "Powered", "Discoverable",
                          "DiscoverableTimeout", "Pairable", "PairableTimeout", "Discovering", "UUIDs", "Modalias", "Roles"])
        let properties = try BlueZShapes.propertyMap(reply[0])
        #expect(properties["Address"] == .string("00:AA:01:00:00:00"))
        #expect(properties["AddressType"] == .string("public"))
        #expect(properties["Class"]?.type == .uint32)
        #expect(properties["DiscoverableTimeout"] == .uint32(180))
        #expect(properties["PairableTimeout"]?.type == .uint32)
        #expect(properties["Modalias"] == .string("usb:v1D6Bp0246d0542"))
        #expect(properties["Roles"] == .array(element: .string, [.string("central"), .string("peripheral")]))
        #expect(properties["Powered"] == .boolean(true))
        #expect(properties["Discovering"] == .boolean(false))
        // Declared in the introspection XML, but never sent.
        #expect(properties["ExperimentalFeatures"] == nil)
        #expect(properties["PowerState"] == nil)
    }

    @BleLoop
    @Test func advertisingManagerCountsAreBytesAndSupportedInstancesCountsFreeSlots() async throws {
        let fixture = try await SimulatorFixture.start()
        defer { fixture.tearDown() }
        let reply = try await fixture.call(SimulatorFixture.hci0, Interface.properties, "GetAll",
                                           [.string("org.bluez.LEAdvertisingManager1")])
        let properties = try BlueZShapes.propertyMap(reply[0])
        #expect(properties["ActiveInstances"] == .byte(0))
        #expect(properties["SupportedInstances"] == .byte(5))
        #expect(properties["SupportedIncludes"]?.type == .array(.string))
        #expect(properties["SupportedSecondaryChannels"] == nil)
        let media = try BlueZShapes.propertyMap(try await fixture.call(SimulatorFixture.hci0, Interface.properties, "GetAll",
                                                                      [.string("org.bluez.Media1")])[0])
        #expect(Array(media.keys) == ["SupportedUUIDs"])
    }

    /// Seen in the VM on both adapters of bluetoothd 5.66 (Sources/BleSim/README.md, "Observed in the VM").
    static let daemonUUIDs = ["00001801", "00001800", "00001200", "0000110c", "0000110e", "0000180a"]
        .map { $0 + "-0000-1000-8000-00805f9b34fb" }

    @BleLoop
    @Test(arguments: [SimulatorFixture.hci0, SimulatorFixture.hci1])
    func adapterUUIDsListTheDaemonsOwnServicesInItsOrder(adapter: ObjectPath) async throws {
        let fixture = try await SimulatorFixture.start()
        defer { fixture.tearDown() }
        #expect(try await fixture.property(adapter, Interface.adapter, "UUIDs")
            == .array(element: .string, AdapterTests.daemonUUIDs.map { .string($0) }))
    }

    @BleLoop
    @Test(arguments: [SimulatorFixture.hci0, SimulatorFixture.hci1])
    func media1SupportedUUIDsAreAudioSourceAndSink(adapter: ObjectPath) async throws {
        let fixture = try await SimulatorFixture.start()
        defer { fixture.tearDown() }
        #expect(try await fixture.property(adapter, "org.bluez.Media1", "SupportedUUIDs")
            == .array(element: .string, [.string("0000110a-0000-1000-8000-00805f9b34fb"), .string("0000110b-0000-1000-8000-00805f9b34fb")]))
    }

    @BleLoop
    @Test func getPowerStateIsInvalidArgsBecause566HasNoSuchProperty() async throws {
        let fixture = try await SimulatorFixture.start()
        defer { fixture.tearDown() }
        await expectDBusError("org.freedesktop.DBus.Error.InvalidArgs", "No such property 'PowerState'") {
            _ = try await fixture.property(SimulatorFixture.hci0, Interface.adapter, "PowerState")
        }
    }

    @BleLoop
    @Test func setPoweredFalseRepliesThenSignalsPoweredAndDiscoveringTogether() async throws {
        let fixture = try await SimulatorFixture.start()
        defer { fixture.tearDown() }
        let (result, mark) = await fixture.callMarked(SimulatorFixture.hci0, Interface.properties, "Set",
                                                      [.string(Interface.adapter), .string("Powered"), .variant(.boolean(false))])
        _ = try result.get()
        let signal = try await fixture.waitForProperty(SimulatorFixture.hci0, "Powered", .boolean(false))
        #expect(fixture.index { $0.changes(SimulatorFixture.hci0, "Powered") }! >= mark, "reply first, then the signal")
        #expect(signal.changedNames == ["Powered", "Discovering"])
        #expect(signal.changed("Discovering") == .boolean(false))
        try await fixture.barrier()
        #expect(fixture.signals(since: 0) { $0.path == SimulatorFixture.hci0 && $0.isPropertiesChanged }.count == 1)
    }

    @BleLoop
    @Test func setPoweredTrueRepliesThenSignalsPoweredOnly() async throws {
        let fixture = try await SimulatorFixture.start(configuration: .init(adapters: [.init(index: 0, powered: false)]))
        defer { fixture.tearDown() }
        let (result, mark) = await fixture.callMarked(SimulatorFixture.hci0, Interface.properties, "Set",
                                                      [.string(Interface.adapter), .string("Powered"), .variant(.boolean(true))])
        _ = try result.get()
        let signal = try await fixture.waitForProperty(SimulatorFixture.hci0, "Powered", .boolean(true))
        #expect(fixture.index { $0.changes(SimulatorFixture.hci0, "Powered") }! >= mark)
        #expect(signal.changedNames == ["Powered"])
    }

    @BleLoop
    @Test func settingTheCurrentPowerRepliesWithoutSignal() async throws {
        let fixture = try await SimulatorFixture.start()
        defer { fixture.tearDown() }
        try await fixture.setProperty(SimulatorFixture.hci0, Interface.adapter, "Powered", .boolean(true))
        try await fixture.barrier()
        #expect(fixture.signals(since: 0) { $0.path == SimulatorFixture.hci0 }.isEmpty)
    }

    @BleLoop
    @Test func racingSecondSetPoweredFailsBusyWithEmptyMessageAndTheAdapterStaysOff() async throws {
        // Slow costs (a power change takes 50 ms × 10), so that the first Set is still in flight
        // when the second arrives.
        let fixture = try await SimulatorFixture.start(configuration: .init(timing: TimingModel(scale: 10)))
        defer { fixture.tearDown() }
        let off: [DBusValue] = [.string(Interface.adapter), .string("Powered"), .variant(.boolean(false))]
        let on: [DBusValue] = [.string(Interface.adapter), .string("Powered"), .variant(.boolean(true))]
        let first = fixture.send(SimulatorFixture.hci0, Interface.properties, "Set", off)
        let second = fixture.send(SimulatorFixture.hci0, Interface.properties, "Set", on)
        let firstResult = await first.reply
        let secondResult = await second.reply
        #expect(throws: Never.self) { try firstResult.result.get() }
        #expect(remoteError(secondResult.result)?.name == "org.bluez.Error.Busy")
        #expect(remoteError(secondResult.result)?.message == "")
        #expect(secondResult.mark <= firstResult.mark, "the second fails at once")
        #expect(try await fixture.property(SimulatorFixture.hci0, Interface.adapter, "Powered") == .boolean(false))
    }

    @BleLoop
    @Test func settingAnEmptyAliasResetsItToTheName() async throws {
        let fixture = try await SimulatorFixture.start()
        defer { fixture.tearDown() }
        try await fixture.setProperty(SimulatorFixture.hci0, Interface.adapter, "Alias", .string("kitchen"))
        try await fixture.waitForProperty(SimulatorFixture.hci0, "Alias", .string("kitchen"))
        let since = fixture.mark
        try await fixture.setProperty(SimulatorFixture.hci0, Interface.adapter, "Alias", .string(""))
        let name = try await fixture.property(SimulatorFixture.hci0, Interface.adapter, "Name")
        let signal = try await fixture.waitForProperty(SimulatorFixture.hci0, "Alias", name, since: since)
        #expect(signal.changedNames == ["Alias"])
    }

    @BleLoop
    @Test func settingDiscoverableRepliesFirstThenSignals() async throws {
        let fixture = try await SimulatorFixture.start()
        defer { fixture.tearDown() }
        let (result, mark) = await fixture.callMarked(SimulatorFixture.hci0, Interface.properties, "Set",
                                                      [.string(Interface.adapter), .string("Discoverable"), .variant(.boolean(true))])
        _ = try result.get()
        try await fixture.waitForProperty(SimulatorFixture.hci0, "Discoverable", .boolean(true))
        #expect(fixture.index { $0.changes(SimulatorFixture.hci0, "Discoverable") }! >= mark)
    }

    @BleLoop
    @Test func settingPairableFalseWhenAlreadyFalseGivesNoSignal() async throws {
        let fixture = try await SimulatorFixture.start()
        defer { fixture.tearDown() }
        #expect(try await fixture.property(SimulatorFixture.hci0, Interface.adapter, "Pairable") == .boolean(false))
        try await fixture.setProperty(SimulatorFixture.hci0, Interface.adapter, "Pairable", .boolean(false))
        try await fixture.barrier()
        #expect(fixture.signals(since: 0) { $0.changes(SimulatorFixture.hci0, "Pairable") }.isEmpty)
    }

    @BleLoop
    @Test func settingAReadOnlyPropertyIsPropertyReadOnly() async throws {
        let fixture = try await SimulatorFixture.start()
        defer { fixture.tearDown() }
        await expectDBusError("org.freedesktop.DBus.Error.PropertyReadOnly", "Property 'Address' is not writable") {
            try await fixture.setProperty(SimulatorFixture.hci0, Interface.adapter, "Address", .string("00:11:22:33:44:55"))
        }
    }

    @BleLoop
    @Test func settingAnUnknownPropertyIsUnknownPropertyButGettingItIsInvalidArgs() async throws {
        let fixture = try await SimulatorFixture.start()
        defer { fixture.tearDown() }
        await expectDBusError("org.freedesktop.DBus.Error.UnknownProperty", "No such property 'X'") {
            try await fixture.setProperty(SimulatorFixture.hci0, Interface.adapter, "X", .boolean(true))
        }
        await expectDBusError("org.freedesktop.DBus.Error.InvalidArgs", "No such property 'X'") {
            _ = try await fixture.property(SimulatorFixture.hci0, Interface.adapter, "X")
        }
    }

    @BleLoop
    @Test(arguments: [("Powered", DBusValue.string("yes")), ("DiscoverableTimeout", .int32(60)), ("Alias", .boolean(true))])
    func settingAWrongVariantTypeIsInvalidSignature(property: String, value: DBusValue) async throws {
        let fixture = try await SimulatorFixture.start()
        defer { fixture.tearDown() }
        await expectDBusError("org.freedesktop.DBus.Error.InvalidSignature", "Invalid signature for '\(property)'") {
            try await fixture.setProperty(SimulatorFixture.hci0, Interface.adapter, property, value)
        }
    }

    @BleLoop
    @Test(arguments: ["Get", "Set", "GetAll"])
    func anUnknownInterfaceInPropertiesCallsIsInvalidArgs(method: String) async throws {
        let fixture = try await SimulatorFixture.start()
        defer { fixture.tearDown() }
        let arguments: [DBusValue]
        switch method {
        case "Get": arguments = [.string("org.bluez.NoSuchInterface1"), .string("Powered")]
        case "Set": arguments = [.string("org.bluez.NoSuchInterface1"), .string("Powered"), .variant(.boolean(true))]
        default: arguments = [.string("org.bluez.NoSuchInterface1")]
        }
        await expectDBusError("org.freedesktop.DBus.Error.InvalidArgs", "No such interface 'org.bluez.NoSuchInterface1'") {
            try await fixture.call(SimulatorFixture.hci0, Interface.properties, method, arguments)
        }
    }

    @BleLoop
    @Test func aWrongMethodSignatureIsUnknownMethodWithTrailingNewline() async throws {
        let fixture = try await SimulatorFixture.start()
        defer { fixture.tearDown() }
        await expectDBusError("org.freedesktop.DBus.Error.UnknownMethod",
                              "Method \"StartDiscovery\" with signature \"s\" on interface \"org.bluez.Adapter1\" doesn't exist\n") {
            try await fixture.call(SimulatorFixture.hci0, Interface.adapter, "StartDiscovery", [.string("now")])
        }
    }

    @BleLoop
    @Test func anUnknownObjectPathIsUnknownObjectWithTrailingNewline() async throws {
        let fixture = try await SimulatorFixture.start()
        defer { fixture.tearDown() }
        await expectDBusError("org.freedesktop.DBus.Error.UnknownObject",
                              "Method \"StartDiscovery\" with signature \"\" on interface \"org.bluez.Adapter1\" doesn't exist\n") {
            try await fixture.call("/org/bluez/hci9", Interface.adapter, "StartDiscovery")
        }
    }

    @BleLoop
    @Test func getDiscoveryFiltersListsThe566Keys() async throws {
        let fixture = try await SimulatorFixture.start()
        defer { fixture.tearDown() }
        let reply = try await fixture.call(SimulatorFixture.hci0, Interface.adapter, "GetDiscoveryFilters")
        #expect(reply == [.array(element: .string, ["UUIDs", "RSSI", "Pathloss", "Transport", "DuplicateData", "Discoverable",
                                                    "Pattern"].map { .string($0) })])
    }

    @BleLoop
    @Test(arguments: ["/org/bluez/hci0/dev_00_11_22_33_44_55", "/org/bluez/hci1/dev_C0_FF_EE_00_00_01", "/nowhere"])
    func removeDeviceOfAnUnknownPathIsDoesNotExist(path: String) async throws {
        let fixture = try await SimulatorFixture.start(peripherals: [Golden.spec()])
        defer { fixture.tearDown() }
        try await fixture.discover(Golden.address)
        await expectDBusError("org.bluez.Error.DoesNotExist", "Does Not Exist") {
            try await fixture.call(SimulatorFixture.hci0, Interface.adapter, "RemoveDevice", [.objectPath(try ObjectPath(path))])
        }
    }

    @BleLoop
    @Test func startDiscoveryOnAPoweredOffAdapterIsNotReady() async throws {
        let fixture = try await SimulatorFixture.start(configuration: .init(adapters: [.init(index: 0, powered: false)]))
        defer { fixture.tearDown() }
        await expectDBusError("org.bluez.Error.NotReady", "Resource Not Ready") {
            try await fixture.call(SimulatorFixture.hci0, Interface.adapter, "StartDiscovery")
        }
    }
}
