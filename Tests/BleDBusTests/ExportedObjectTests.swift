import BleDBus
import BleTestSupport
import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import Testing
import BlueZVocabulary

/// Objects exported by a connection: dispatch, the standard error replies, `Properties`,
/// `Introspectable`, `ObjectManager`, and every call answered exactly once.
@Suite(.timeLimit(.minutes(TestTime.minutes(1)))) @BleLoop struct ExportedObjectTests {
    nonisolated static let interface = "com.example.Thermometer"
    static let path: ObjectPath = "/org/example/thermo0"

    /// The state behind the exported thermometer.
    @BleLoop final class Thermometer {
        var celsius: Double = 21.5
        var name = "kitchen"
        var rssi: Int16?
        var lastCaller = ""
    }

    /// `com.example.Thermometer`: `Reset(d)`, `Describe() -> s`, `WhoCalls() -> s`, and properties
    /// `Name` (readwrite), `Celsius` (read), `RSSI` (read, absent while nil), `Secret` (write).
    static func thermometerInterface(_ state: Thermometer) -> ExportedInterface {
        ExportedInterface(interface, methods: [
            ExportedMethod("Reset", in: [ArgumentDescription("celsius", .double)]) { call in
                guard case .double(let value) = call.arguments[0] else { return }
                state.celsius = value
                call.reply()
            },
            ExportedMethod("Describe", out: [ArgumentDescription("text", .string)]) { call in
                call.reply([.string("\(state.name): \(state.celsius) °C")])
            },
            ExportedMethod("WhoCalls", out: [ArgumentDescription("sender", .string)]) { call in
                state.lastCaller = call.sender
                call.reply([.string(call.sender)])
            },
        ], signals: [
            SignalDescription("Alarm", [ArgumentDescription("celsius", .double)]),
        ], properties: [
            ExportedProperty("Name", .string, access: .readwrite, get: { .string(state.name) }, set: { value, call in
                guard case .string(let name) = value else { return }
                state.name = name
                call.reply()
            }),
            ExportedProperty("Celsius", .double) { .double(state.celsius) },
            ExportedProperty("RSSI", .int16) { state.rssi.map(DBusValue.int16) },
            ExportedProperty("Secret", .string, access: .write, get: { .string("hidden") }, set: { _, call in call.reply() }),
        ])
    }

    /// A client, and a server exporting the thermometer.
    static func fixture(_ bus: PrivateBus) async throws -> (Connection, Connection, Thermometer) {
        let (client, server) = try await openPair(bus)
        let state = Thermometer()
        server.objects.register(path, interfaces: [thermometerInterface(state)])
        return (client, server, state)
    }

    static func call(_ client: Connection, _ server: Connection, path: ObjectPath = ExportedObjectTests.path,
                     interface: String? = ExportedObjectTests.interface, _ member: String,
                     _ arguments: [DBusValue] = []) async throws -> [DBusValue] {
        try await client.call(destination: server.uniqueName, path: path, interface: interface, member: member,
                              arguments: arguments)
    }

    static func properties(_ client: Connection, _ server: Connection, _ member: String,
                           _ arguments: [DBusValue]) async throws -> [DBusValue] {
        try await call(client, server, interface: ObjectRegistry.Standard.properties, member, arguments)
    }

    // MARK: Dispatch

    @Test func aCallReachesTheMethodsHandlerWithItsArguments() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server, state) = try await Self.fixture(bus)
        #expect(try await Self.call(client, server, "Reset", [.double(-4)]) == [])
        #expect(state.celsius == -4)
        #expect(try await Self.call(client, server, "Describe") == [.string("kitchen: -4.0 °C")])
    }

    @Test func aCallWithoutAnInterfaceIsDispatchedByMemberName() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server, _) = try await Self.fixture(bus)
        #expect(try await Self.call(client, server, interface: nil, "Describe") == [.string("kitchen: 21.5 °C")])
    }

    @Test func theHandlerSeesTheCallersUniqueName() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server, state) = try await Self.fixture(bus)
        #expect(try await Self.call(client, server, "WhoCalls") == [.string(client.uniqueName)])
        #expect(state.lastCaller == client.uniqueName)
        #expect(client.uniqueName.hasPrefix(":"))
    }

    @Test func aCallToAPathWithoutAnObjectIsUnknownObject() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server, _) = try await Self.fixture(bus)
        let error = await dbusError { try await Self.call(client, server, path: "/org/example/none", "Describe") }
        #expect(error?.remoteName == "org.freedesktop.DBus.Error.UnknownObject")
    }

    @Test func aCallToAnUnknownMethodIsUnknownMethod() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server, _) = try await Self.fixture(bus)
        let error = await dbusError { try await Self.call(client, server, "Explode") }
        #expect(error == .remote(name: "org.freedesktop.DBus.Error.UnknownMethod",
                                 message: "Method \"Explode\" with signature \"\" on interface \"\(Self.interface)\" doesn't exist\n"))
    }

    @Test func aCallWithTheWrongSignatureIsUnknownMethod() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server, state) = try await Self.fixture(bus)
        let error = await dbusError { try await Self.call(client, server, "Reset", [.string("warm")]) }
        #expect(error == .remote(name: "org.freedesktop.DBus.Error.UnknownMethod",
                                 message: "Method \"Reset\" with signature \"s\" on interface \"\(Self.interface)\" doesn't exist\n"))
        #expect(state.celsius == 21.5)
    }

    @Test func aCallOnAnUnknownInterfaceOfAnExistingObjectIsUnknownMethod() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server, _) = try await Self.fixture(bus)
        let error = await dbusError { try await Self.call(client, server, interface: "com.example.Other", "Describe") }
        #expect(error?.remoteName == "org.freedesktop.DBus.Error.UnknownMethod")
    }

    @Test func anUnregisteredObjectIsUnknownObjectAgain() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server, _) = try await Self.fixture(bus)
        server.objects.unregister(Self.path)
        #expect(!server.objects.isRegistered(Self.path))
        let error = await dbusError { try await Self.call(client, server, "Describe") }
        #expect(error?.remoteName == "org.freedesktop.DBus.Error.UnknownObject")
    }

    @Test func registeringAnInterfaceAgainReplacesIt() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server, _) = try await Self.fixture(bus)
        server.objects.register(Self.path, interfaces: [ExportedInterface(Self.interface, methods: [
            ExportedMethod("Describe", out: [ArgumentDescription("text", .string)]) { $0.reply([.string("replaced")]) },
        ])])
        #expect(server.objects.interfaceNames(at: Self.path) == [Self.interface])
        #expect(try await Self.call(client, server, "Describe") == [.string("replaced")])
    }

    // MARK: Answered exactly once

    @Test func aCallTheHandlerDropsUnansweredGetsFailed() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server) = try await openPair(bus)
        server.objects.register("/forgetful", interfaces: [ExportedInterface(Self.interface, methods: [
            ExportedMethod("Forget") { _ in },
        ])])
        let error = await dbusError { try await Self.call(client, server, path: "/forgetful", "Forget") }
        #expect(error == .remote(name: "org.freedesktop.DBus.Error.Failed", message: "The object did not answer Forget"))
    }

    @Test func aSecondAnswerIsIgnored() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server) = try await openPair(bus)
        let answers = LoopBox(0)
        server.tracer = { direction, message in
            if direction == .sent, message.kind == .methodReturn || message.kind == .error { answers.value += 1 }
        }
        server.objects.register("/eager", interfaces: [ExportedInterface(Self.interface, methods: [
            ExportedMethod("Answer", out: [ArgumentDescription("n", .uint32)]) { call in
                call.reply([.uint32(1)])
                #expect(call.isAnswered)
                call.reply([.uint32(2)])
                call.fail(name: "com.example.Error.Late", message: "too late")
            },
        ])])
        #expect(try await Self.call(client, server, path: "/eager", "Answer") == [.uint32(1)])
        // The next call's reply comes after any stray second answer to the first.
        #expect(try await Self.call(client, server, path: "/eager", "Answer") == [.uint32(1)])
        #expect(answers.value == 2)
    }

    @Test func aReplyThatCannotBeEncodedReachesTheCallerAsFailed() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server) = try await openPair(bus)
        server.objects.register("/broken", interfaces: [ExportedInterface(Self.interface, methods: [
            ExportedMethod("Deep") { call in call.reply([Nesting.arrays(depth: 40)]) },
        ])])
        let error = await dbusError { try await Self.call(client, server, path: "/broken", "Deep") }
        #expect(error?.remoteName == "org.freedesktop.DBus.Error.Failed")
        guard case .remote(_, let message)? = error else { return }
        #expect(message.contains("could not be encoded"))
    }

    @Test func failingWithAnInvalidErrorNameSendsFailed() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server) = try await openPair(bus)
        server.objects.register("/odd", interfaces: [ExportedInterface(Self.interface, methods: [
            ExportedMethod("Odd") { call in call.fail(name: "not an error name", message: "with\0nul") },
        ])])
        let error = await dbusError { try await Self.call(client, server, path: "/odd", "Odd") }
        #expect(error == .remote(name: "org.freedesktop.DBus.Error.Failed", message: "withnul"))
    }

    @Test func failingWithARemoteErrorKeepsItsName() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server) = try await openPair(bus)
        server.objects.register("/relay", interfaces: [ExportedInterface(Self.interface, methods: [
            ExportedMethod("Relay") { call in call.fail(DBusError.remote(name: "org.bluez.Error.InProgress", message: "busy")) },
        ])])
        let error = await dbusError { try await Self.call(client, server, path: "/relay", "Relay") }
        #expect(error == .remote(name: "org.bluez.Error.InProgress", message: "busy"))
    }

    // MARK: Properties

    @Test func getReturnsThePropertysCurrentValue() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server, state) = try await Self.fixture(bus)
        state.celsius = 30
        #expect(try await Self.properties(client, server, "Get", [.string(Self.interface), .string("Celsius")])
            == [.variant(.double(30))])
    }

    @Test func getOnAnUnknownInterfaceIsInvalidArgs() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server, _) = try await Self.fixture(bus)
        let error = await dbusError {
            try await Self.properties(client, server, "Get", [.string("com.example.Nope"), .string("Celsius")])
        }
        #expect(error == .remote(name: "org.freedesktop.DBus.Error.InvalidArgs", message: "No such interface 'com.example.Nope'"))
    }

    @Test(arguments: ["Nope", "RSSI", "Secret"])
    func getOfAMissingAbsentOrWriteOnlyPropertyIsInvalidArgs(property: String) async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server, _) = try await Self.fixture(bus)
        let error = await dbusError {
            try await Self.properties(client, server, "Get", [.string(Self.interface), .string(property)])
        }
        #expect(error == .remote(name: "org.freedesktop.DBus.Error.InvalidArgs", message: "No such property '\(property)'"))
    }

    @Test func getAllReturnsTheReadablePresentPropertiesInOrder() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server, _) = try await Self.fixture(bus)
        let reply = try await Self.properties(client, server, "GetAll", [.string(Self.interface)])
        #expect(reply == [BlueZShapes.propertyDictionary([("Name", .string("kitchen")), ("Celsius", .double(21.5))])])
    }

    @Test func getAllOnAnUnknownInterfaceIsInvalidArgs() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server, _) = try await Self.fixture(bus)
        let error = await dbusError { try await Self.properties(client, server, "GetAll", [.string("com.example.Nope")]) }
        #expect(error?.remoteName == "org.freedesktop.DBus.Error.InvalidArgs")
    }

    @Test func setAppliesAWritableProperty() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server, state) = try await Self.fixture(bus)
        #expect(try await Self.properties(client, server, "Set", [.string(Self.interface), .string("Name"), .variant(.string("attic"))]) == [])
        #expect(state.name == "attic")
        #expect(try await Self.properties(client, server, "Get", [.string(Self.interface), .string("Name")]) == [.variant(.string("attic"))])
    }

    @Test func setOfAnUnknownPropertyIsUnknownProperty() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server, _) = try await Self.fixture(bus)
        let error = await dbusError {
            try await Self.properties(client, server, "Set", [.string(Self.interface), .string("Nope"), .variant(.string("x"))])
        }
        #expect(error == .remote(name: "org.freedesktop.DBus.Error.UnknownProperty", message: "No such property 'Nope'"))
    }

    @Test func setOfAReadOnlyPropertyIsPropertyReadOnly() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server, state) = try await Self.fixture(bus)
        let error = await dbusError {
            try await Self.properties(client, server, "Set", [.string(Self.interface), .string("Celsius"), .variant(.double(99))])
        }
        #expect(error == .remote(name: "org.freedesktop.DBus.Error.PropertyReadOnly", message: "Property 'Celsius' is not writable"))
        #expect(state.celsius == 21.5)
    }

    @Test func setWithAValueOfTheWrongTypeIsInvalidSignature() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server, state) = try await Self.fixture(bus)
        let error = await dbusError {
            try await Self.properties(client, server, "Set", [.string(Self.interface), .string("Name"), .variant(.uint32(7))])
        }
        #expect(error == .remote(name: "org.freedesktop.DBus.Error.InvalidSignature", message: "Invalid signature for 'Name'"))
        #expect(state.name == "kitchen")
    }

    @Test func setOnAnUnknownInterfaceIsInvalidArgs() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server, _) = try await Self.fixture(bus)
        let error = await dbusError {
            try await Self.properties(client, server, "Set", [.string("com.example.Nope"), .string("Name"), .variant(.string("x"))])
        }
        #expect(error?.remoteName == "org.freedesktop.DBus.Error.InvalidArgs")
    }

    @Test func propertiesWithTheWrongSignatureAreUnknownMethod() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server, _) = try await Self.fixture(bus)
        let error = await dbusError { try await Self.properties(client, server, "Get", [.string(Self.interface)]) }
        #expect(error?.remoteName == "org.freedesktop.DBus.Error.UnknownMethod")
    }

    @Test func propertiesChangedCarriesNewValuesAndInvalidatesAbsentProperties() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server, state) = try await Self.fixture(bus)
        let changes = Mailbox<DBusMessage>("PropertiesChanged")
        let subscription = try client.signals.subscribe(SignalMatch(
            path: Self.path, interface: ObjectRegistry.Standard.properties, member: "PropertiesChanged")) { changes.post($0) }
        try await client.syncWithBus()
        state.celsius = 25
        state.rssi = nil
        server.objects.emitPropertiesChanged(path: Self.path, interface: Self.interface, names: ["Celsius", "RSSI"])
        let message = try await changes.next()
        #expect(message.sender == server.uniqueName)
        #expect(message.body == [
            .string(Self.interface),
            BlueZShapes.propertyDictionary([("Celsius", .double(25))]),
            .array(element: .string, [.string("RSSI")]),
        ])
        withExtendedLifetime(subscription) {}
    }

    // MARK: Introspection

    /// The elements of an XML document, with their attributes, in document order.
    final class ElementCollector: NSObject, XMLParserDelegate {
        var elements: [(name: String, attributes: [String: String])] = []
        var error: Error?

        func parser(_ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?,
                    qualifiedName: String?, attributes: [String: String] = [:]) {
            elements.append((elementName, attributes))
        }

        func parser(_ parser: XMLParser, parseErrorOccurred parseError: Error) {
            error = parseError
        }
    }

    static func parseXML(_ xml: String) -> ElementCollector? {
        let parser = XMLParser(data: Data(xml.utf8))
        let collector = ElementCollector()
        parser.delegate = collector
        guard parser.parse() else {
            Issue.record("introspection XML does not parse: \(String(describing: collector.error ?? parser.parserError))\n\(xml)")
            return nil
        }
        return collector
    }

    static func introspect(_ client: Connection, _ server: Connection, _ path: ObjectPath) async throws -> String {
        let reply = try await client.call(destination: server.uniqueName, path: path,
                                          interface: ObjectRegistry.Standard.introspectable, member: "Introspect")
        return try reply.argument(0, as: String.self)
    }

    @Test func introspectionIsXMLListingTheInterfacesMethodsSignalsAndProperties() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server, _) = try await Self.fixture(bus)
        let xml = try await Self.introspect(client, server, Self.path)
        guard let document = Self.parseXML(xml) else { return }
        let interfaces = document.elements.filter { $0.name == "interface" }.compactMap { $0.attributes["name"] }
        #expect(interfaces == [ObjectRegistry.Standard.introspectable, Self.interface, ObjectRegistry.Standard.properties])
        let methods = document.elements.filter { $0.name == "method" }.compactMap { $0.attributes["name"] }
        #expect(methods == ["Introspect", "Reset", "Describe", "WhoCalls", "Get", "Set", "GetAll"])
        let properties = document.elements.filter { $0.name == "property" }.map {
            "\($0.attributes["name"] ?? "?") \($0.attributes["type"] ?? "?") \($0.attributes["access"] ?? "?")"
        }
        #expect(properties == ["Name s readwrite", "Celsius d read", "RSSI n read", "Secret s write"])
        #expect(document.elements.contains { $0.name == "signal" && $0.attributes["name"] == "Alarm" })
        let resetArgument = document.elements.first { $0.name == "arg" && $0.attributes["name"] == "celsius" }
        #expect(resetArgument?.attributes["type"] == "d")
        #expect(resetArgument?.attributes["direction"] == "in")
    }

    @Test func introspectingAParentListsItsChildrenAsNodes() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server, _) = try await Self.fixture(bus)
        server.objects.register("/org/example/other", interfaces: [ExportedInterface("com.example.Other")])
        server.objects.register("/org/example/thermo0/sensor", interfaces: [ExportedInterface("com.example.Sensor")])
        guard let root = Self.parseXML(try await Self.introspect(client, server, .root)) else { return }
        #expect(root.elements.filter { $0.name == "node" }.compactMap { $0.attributes["name"] } == ["org"])
        guard let parent = Self.parseXML(try await Self.introspect(client, server, "/org/example")) else { return }
        #expect(parent.elements.filter { $0.name == "node" }.compactMap { $0.attributes["name"] } == ["other", "thermo0"])
    }

    @Test func introspectingAPathWithNothingAtOrBelowItIsUnknownObject() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server, _) = try await Self.fixture(bus)
        let error = await dbusError { try await Self.introspect(client, server, "/nothing/here") }
        #expect(error?.remoteName == "org.freedesktop.DBus.Error.UnknownObject")
    }

    @Test func introspectionEscapesXMLSpecialCharacters() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server) = try await openPair(bus)
        server.objects.register("/escape", interfaces: [ExportedInterface("com.example.Escape", methods: [
            ExportedMethod("M", in: [ArgumentDescription("a<b>&\"c\"", .string)]) { $0.reply() },
        ])])
        guard let document = Self.parseXML(try await Self.introspect(client, server, "/escape")) else { return }
        #expect(document.elements.contains { $0.name == "arg" && $0.attributes["name"] == "a<b>&\"c\"" })
    }

    // MARK: ObjectManager

    static let managerPath: ObjectPath = "/org/example"

    static func interfacesValue(_ entries: [(String, DBusValue)]) -> DBusValue {
        .dictionary(key: .string, value: .dictionary(key: .string, value: .variant), entries.map {
            DBusDictionaryEntry(key: .string($0.0), value: $0.1)
        })
    }

    @Test func getManagedObjectsListsEveryObjectBelowTheManagerWithItsProperties() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server, _) = try await Self.fixture(bus)
        server.objects.addObjectManager(at: Self.managerPath)
        server.objects.register("/org/example/thermo0/sensor", interfaces: [ExportedInterface("com.example.Sensor")])
        server.objects.register("/elsewhere", interfaces: [ExportedInterface("com.example.Elsewhere")])
        let reply = try await client.call(destination: server.uniqueName, path: Self.managerPath,
                                          interface: ObjectRegistry.Standard.objectManager, member: "GetManagedObjects")
        #expect(reply.count == 1)
        let objects = try BlueZShapes.managedObjects(reply[0])
        #expect(objects.keys.sorted() == [Self.path, "/org/example/thermo0/sensor"])
        #expect(objects[Self.path]?[Self.interface] == ["Name": .string("kitchen"), "Celsius": .double(21.5)])
        #expect(objects[Self.path]?[ObjectRegistry.Standard.properties] == [:])
        #expect(objects[Self.path]?[ObjectRegistry.Standard.introspectable] == [:])
        #expect(objects["/org/example/thermo0/sensor"].map { Set($0.keys) } == [ObjectRegistry.Standard.introspectable, "com.example.Sensor"])
    }

    @Test func getManagedObjectsOnAPathThatIsNoManagerIsUnknownObject() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server, _) = try await Self.fixture(bus)
        let error = await dbusError {
            try await client.call(destination: server.uniqueName, path: Self.managerPath,
                                  interface: ObjectRegistry.Standard.objectManager, member: "GetManagedObjects")
        }
        #expect(error?.remoteName == "org.freedesktop.DBus.Error.UnknownObject")
    }

    static func subscribeToObjectManager(_ client: Connection, member: String) async throws -> (SignalSubscription, Mailbox<DBusMessage>) {
        let received = Mailbox<DBusMessage>(member)
        let subscription = try client.signals.subscribe(SignalMatch(
            path: managerPath, interface: ObjectRegistry.Standard.objectManager, member: member)) { received.post($0) }
        try await client.syncWithBus()
        return (subscription, received)
    }

    @Test func registeringAnObjectUnderAManagerEmitsInterfacesAdded() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server) = try await openPair(bus)
        server.objects.addObjectManager(at: Self.managerPath)
        let (subscription, added) = try await Self.subscribeToObjectManager(client, member: "InterfacesAdded")
        server.objects.register(Self.path, interfaces: [Self.thermometerInterface(Thermometer())])
        let message = try await added.next()
        #expect(message.sender == server.uniqueName)
        #expect(message.body == [.objectPath(Self.path), Self.interfacesValue([
            (ObjectRegistry.Standard.introspectable, BlueZShapes.propertyDictionary([])),
            (Self.interface, BlueZShapes.propertyDictionary([("Name", .string("kitchen")), ("Celsius", .double(21.5))])),
            (ObjectRegistry.Standard.properties, BlueZShapes.propertyDictionary([])),
        ])])
        withExtendedLifetime(subscription) {}
    }

    @Test func addingAnInterfaceToAnExistingObjectAnnouncesOnlyTheNewInterface() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server) = try await openPair(bus)
        server.objects.addObjectManager(at: Self.managerPath)
        server.objects.register(Self.path, interfaces: [Self.thermometerInterface(Thermometer())])
        let (subscription, added) = try await Self.subscribeToObjectManager(client, member: "InterfacesAdded")
        server.objects.register(Self.path, interfaces: [ExportedInterface("com.example.Battery", properties: [
            ExportedProperty("Percentage", .byte) { .byte(80) },
        ])])
        let message = try await added.next()
        #expect(message.body == [.objectPath(Self.path), Self.interfacesValue([
            ("com.example.Battery", BlueZShapes.propertyDictionary([("Percentage", .byte(80))])),
        ])])
        withExtendedLifetime(subscription) {}
    }

    @Test func unregisteringAnObjectUnderAManagerEmitsInterfacesRemoved() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server) = try await openPair(bus)
        server.objects.addObjectManager(at: Self.managerPath)
        server.objects.register(Self.path, interfaces: [Self.thermometerInterface(Thermometer())])
        let (subscription, removed) = try await Self.subscribeToObjectManager(client, member: "InterfacesRemoved")
        server.objects.unregister(Self.path)
        let message = try await removed.next()
        #expect(message.body == [.objectPath(Self.path), .array(element: .string, [
            .string(ObjectRegistry.Standard.properties), .string(ObjectRegistry.Standard.introspectable), .string(Self.interface),
        ])])
        withExtendedLifetime(subscription) {}
    }

    @Test func removingOneInterfaceAnnouncesOnlyThatInterface() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server) = try await openPair(bus)
        server.objects.addObjectManager(at: Self.managerPath)
        server.objects.register(Self.path, interfaces: [Self.thermometerInterface(Thermometer()), ExportedInterface("com.example.Battery")])
        let (subscription, removed) = try await Self.subscribeToObjectManager(client, member: "InterfacesRemoved")
        server.objects.unregister(Self.path, interfaces: ["com.example.Battery"])
        let message = try await removed.next()
        #expect(message.body == [.objectPath(Self.path), .array(element: .string, [.string("com.example.Battery")])])
        #expect(server.objects.interfaceNames(at: Self.path) == [Self.interface])
        withExtendedLifetime(subscription) {}
    }
}
