import Testing
import BleDBus
import BleTestSupport

@Test func smoke() async throws {
    print("start"); let bus = try PrivateBus(); print("bus", bus.address)
    defer { bus.stop() }
    let a = try await Connection.open(bus.busAddress)
    let b = try await Connection.open(bus.busAddress)
    let nameB = await b.uniqueName; print("opened")
    await b.objects.register("/test", interfaces: [ExportedInterface("com.example.Echo", methods: [
        ExportedMethod("Echo", in: [ArgumentDescription("v", .string)], out: [ArgumentDescription("v", .string)]) { call in
            call.reply(call.arguments)
        }
    ], properties: [ExportedProperty("Name", .string) { .string("echo") }])])
    let reply = try await a.call(destination: nameB, path: "/test", interface: "com.example.Echo", member: "Echo", arguments: [.string("hi")])
    #expect(reply == [.string("hi")])
    let props = try await a.call(destination: nameB, path: "/test", interface: "org.freedesktop.DBus.Properties", member: "GetAll", arguments: [.string("com.example.Echo")])
    print(props)
    let xml = try await a.call(destination: nameB, path: "/", interface: "org.freedesktop.DBus.Introspectable", member: "Introspect")
    print(xml)
}
