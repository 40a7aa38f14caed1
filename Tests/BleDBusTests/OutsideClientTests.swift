import BleDBus
import BleTestSupport
import Foundation
import Testing

/// Real D-Bus clients — libdbus's `dbus-send` and GLib's `gdbus` — talk to an object we export,
/// as child processes on the private bus; their printed output is what is checked.
@Suite(.timeLimit(.minutes(TestTime.minutes(1)))) @BleLoop struct OutsideClientTests {
    nonisolated static let name = "com.example.Outside"
    nonisolated static let interface = "com.example.Greeter"
    static let managerPath: ObjectPath = "/com/example"
    static let path: ObjectPath = "/com/example/Greeter"

    /// A server that owns `com.example.Outside` and exports a greeter below an object manager.
    static func serve(on bus: PrivateBus) async throws -> Connection {
        let server = try await Connection.open(bus.busAddress)
        server.objects.addObjectManager(at: managerPath)
        server.objects.register(path, interfaces: [ExportedInterface(interface, methods: [
            ExportedMethod("Greet", in: [ArgumentDescription("name", .string)], out: [ArgumentDescription("greeting", .string)]) { call in
                guard case .string(let name) = call.arguments[0] else { return }
                call.reply([.string("Hello, \(name)")])
            },
            ExportedMethod("Sum", in: [ArgumentDescription("values", .array(.int32))], out: [ArgumentDescription("sum", .int64)]) { call in
                guard case .array(_, let values) = call.arguments[0] else { return }
                call.reply([.int64(values.reduce(0) { total, value in
                    if case .int32(let number) = value { return total + Int64(number) }
                    return total
                })])
            },
        ], signals: [SignalDescription("Greeted", [ArgumentDescription("name", .string)])], properties: [
            ExportedProperty("Name", .string) { .string("greeter") },
            ExportedProperty("Count", .uint32) { .uint32(3) },
        ])])
        try await server.claimName(name)
        return server
    }

    static func dbusSend(_ bus: PrivateBus, _ arguments: [String]) async throws -> ProgramOutput {
        try await runProgram(["/usr/bin/dbus-send", "--bus=\(bus.address)", "--print-reply", "--dest=\(name)"] + arguments)
    }

    static func gdbusCall(_ bus: PrivateBus, path: ObjectPath = OutsideClientTests.path, _ method: String,
                          _ arguments: [String] = []) async throws -> ProgramOutput {
        try await runProgram(["/usr/bin/gdbus", "call", "--address", bus.address, "--dest", name,
                              "--object-path", path.rawValue, "--method", method] + arguments)
    }

    /// The output's lines with runs of spaces collapsed and no surrounding whitespace, for
    /// checks independent of indentation.
    static func lines(_ output: ProgramOutput) -> [String] {
        output.output.split(separator: "\n").map {
            $0.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
        }
    }

    @Test func dbusSendCallsAMethod() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let server = try await Self.serve(on: bus)
        let result = try await Self.dbusSend(bus, [Self.path.rawValue, "\(Self.interface).Greet", "string:world"])
        #expect(result.status == 0, "\(result.output)")
        let lines = Self.lines(result)
        #expect(lines.first?.hasPrefix("method return") == true, "\(result.output)")
        #expect(lines.first?.contains("sender=\(server.uniqueName)") == true, "\(result.output)")
        #expect(lines.dropFirst() == ["string \"Hello, world\""], "\(result.output)")
    }

    @Test func dbusSendPassesAnArray() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let server = try await Self.serve(on: bus)
        let result = try await Self.dbusSend(bus, [Self.path.rawValue, "\(Self.interface).Sum", "array:int32:1,2,39"])
        #expect(result.status == 0, "\(result.output)")
        #expect(Self.lines(result).dropFirst() == ["int64 42"], "\(result.output)")
        withExtendedLifetime(server) {}
    }

    @Test func dbusSendSeesAnUnknownMethodError() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let server = try await Self.serve(on: bus)
        let result = try await Self.dbusSend(bus, [Self.path.rawValue, "\(Self.interface).Shout"])
        #expect(result.status != 0)
        #expect(result.output.contains("Error org.freedesktop.DBus.Error.UnknownMethod"), "\(result.output)")
        withExtendedLifetime(server) {}
    }

    @Test func dbusSendGetsAProperty() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let server = try await Self.serve(on: bus)
        let result = try await Self.dbusSend(bus, [Self.path.rawValue, "org.freedesktop.DBus.Properties.Get",
                                                    "string:\(Self.interface)", "string:Count"])
        #expect(result.status == 0, "\(result.output)")
        #expect(Self.lines(result).dropFirst() == ["variant uint32 3"], "\(result.output)")
        withExtendedLifetime(server) {}
    }

    @Test func dbusSendIntrospectsAnObject() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let server = try await Self.serve(on: bus)
        let result = try await Self.dbusSend(bus, [Self.path.rawValue, "org.freedesktop.DBus.Introspectable.Introspect"])
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains("<interface name=\"\(Self.interface)\">"), "\(result.output)")
        #expect(result.output.contains("<method name=\"Greet\">"), "\(result.output)")
        withExtendedLifetime(server) {}
    }

    @Test func dbusSendGetsManagedObjects() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let server = try await Self.serve(on: bus)
        let result = try await Self.dbusSend(bus, [Self.managerPath.rawValue, "org.freedesktop.DBus.ObjectManager.GetManagedObjects"])
        #expect(result.status == 0, "\(result.output)")
        let lines = Self.lines(result)
        #expect(lines.contains("object path \"\(Self.path)\""), "\(result.output)")
        #expect(lines.contains("string \"\(Self.interface)\""), "\(result.output)")
        #expect(lines.contains("string \"Name\""), "\(result.output)")
        #expect(lines.contains("variant string \"greeter\""), "\(result.output)")
        #expect(lines.contains("variant uint32 3"), "\(result.output)")
        withExtendedLifetime(server) {}
    }

    @Test func gdbusCallsAMethod() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let server = try await Self.serve(on: bus)
        let result = try await Self.gdbusCall(bus, "\(Self.interface).Greet", ["world"])
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output == "('Hello, world',)\n")
        withExtendedLifetime(server) {}
    }

    @Test func gdbusGetsAProperty() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let server = try await Self.serve(on: bus)
        let result = try await Self.gdbusCall(bus, "org.freedesktop.DBus.Properties.Get", [Self.interface, "Name"])
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output == "(<'greeter'>,)\n")
        withExtendedLifetime(server) {}
    }

    @Test func gdbusGetsAllProperties() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let server = try await Self.serve(on: bus)
        let result = try await Self.gdbusCall(bus, "org.freedesktop.DBus.Properties.GetAll", [Self.interface])
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output == "({'Name': <'greeter'>, 'Count': <uint32 3>},)\n")
        withExtendedLifetime(server) {}
    }

    @Test func gdbusGetsManagedObjects() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let server = try await Self.serve(on: bus)
        let result = try await Self.gdbusCall(bus, path: Self.managerPath, "org.freedesktop.DBus.ObjectManager.GetManagedObjects")
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output == """
            ({objectpath '/com/example/Greeter': {'org.freedesktop.DBus.Introspectable': @a{sv} {}, \
            'com.example.Greeter': {'Name': <'greeter'>, 'Count': <uint32 3>}, \
            'org.freedesktop.DBus.Properties': {}}},)

            """)
        withExtendedLifetime(server) {}
    }

    @Test func gdbusIntrospectsAnObject() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let server = try await Self.serve(on: bus)
        let result = try await runProgram(["/usr/bin/gdbus", "introspect", "--address", bus.address, "--dest", Self.name,
                                           "--object-path", Self.path.rawValue])
        #expect(result.status == 0, "\(result.output)")
        let lines = Self.lines(result)
        #expect(lines.contains("interface \(Self.interface) {"), "\(result.output)")
        #expect(lines.contains("Greet(in s name,"), "\(result.output)")
        #expect(lines.contains("out s greeting);"), "\(result.output)")
        #expect(lines.contains("Greeted(s name);"), "\(result.output)")
        #expect(lines.contains("readonly s Name = 'greeter';"), "\(result.output)")
        #expect(lines.contains("readonly u Count = 3;"), "\(result.output)")
        #expect(lines.contains("interface org.freedesktop.DBus.Properties {"), "\(result.output)")
        withExtendedLifetime(server) {}
    }

    @Test func gdbusIntrospectsTheTreeBelowTheManager() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let server = try await Self.serve(on: bus)
        let result = try await runProgram(["/usr/bin/gdbus", "introspect", "--address", bus.address, "--dest", Self.name,
                                           "--object-path", "/", "--recurse"])
        #expect(result.status == 0, "\(result.output)")
        let lines = Self.lines(result)
        let manager = lines.firstIndex(of: "node /com/example {")
        let object = lines.firstIndex(of: "node /com/example/Greeter {")
        let objectManager = lines.firstIndex(of: "interface org.freedesktop.DBus.ObjectManager {")
        let greeter = lines.firstIndex(of: "interface \(Self.interface) {")
        #expect(manager != nil && object != nil, "\(result.output)")
        // The manager interface is listed at the manager, the greeter at its child.
        if let manager, let object, let objectManager, let greeter {
            #expect(manager < objectManager && objectManager < object && object < greeter, "\(result.output)")
        } else {
            Issue.record("interfaces missing: \(result.output)")
        }
        withExtendedLifetime(server) {}
    }

    @Test func aSignalFromDbusSendReachesASubscription() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let client = try await Connection.open(bus.busAddress)
        let received = Mailbox<DBusMessage>("the outside signal")
        let subscription = try client.signals.subscribe(SignalMatch(interface: Self.interface, member: "Greeted")) {
            received.post($0)
        }
        try await client.syncWithBus()
        let result = try await runProgram(["/usr/bin/dbus-send", "--bus=\(bus.address)", "--type=signal",
                                           Self.path.rawValue, "\(Self.interface).Greeted", "string:from outside",
                                           "dict:string:int32:Level,7"])
        #expect(result.status == 0, "\(result.output)")
        let message = try await received.next()
        #expect(message.path == Self.path)
        #expect(message.body == [.string("from outside"),
                                 .dictionary(key: .string, value: .int32, [DBusDictionaryEntry(key: .string("Level"), value: .int32(7))])])
        withExtendedLifetime(subscription) {}
    }
}
