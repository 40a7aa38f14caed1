import BleDBus
import Foundation
let address = CommandLine.arguments[1]
let a = try await Connection.open(.address(address))
let b = try await Connection.open(.address(address))
let nameB = await b.uniqueName
print("opened")
await b.objects.register("/test", interfaces: [ExportedInterface("com.example.Echo", methods: [
    ExportedMethod("Echo", in: [ArgumentDescription("v", .string)], out: [ArgumentDescription("v", .string)]) { call in
        print("got call")
        call.reply(call.arguments)
    }
], properties: [ExportedProperty("Name", .string) { .string("echo") }])])
print("registered")
await a.setTracer { d, m in print(d, m) }
await b.setTracer { d, m in print("B", d, m) }
let reply = try await a.call(destination: nameB, path: "/test", interface: "com.example.Echo", member: "Echo", arguments: [.string("hi")])
print(reply)
extension Connection { func setTracer(_ t: @escaping @BleLoop (TraceDirection, DBusMessage) -> Void) { tracer = t } }
