import BleDBus
import BleTestSupport
import Foundation
import Testing

/// Method calls built from cached header templates (`MessageTemplates`) reach the object and
/// member they name, with their own body and flags, however the calls interleave and however
/// many distinct targets push entries out of the cache.
@Suite(.timeLimit(.minutes(1))) @BleLoop struct MessageTemplateTests {
    nonisolated static let interface = "com.example.Templates"

    /// Exports `/targets/<n>` for each n, with `Where(u) -> (o, s, u)` answering its own path,
    /// the member called and the argument, and `Note()`, which posts whether its caller expects
    /// a reply and answers nothing else.
    static func exportTargets(_ count: Int, on server: Connection, notes: Mailbox<Bool>) throws {
        for index in 0..<count {
            let path = try ObjectPath("/targets/\(index)")
            server.objects.register(path, interfaces: [ExportedInterface(interface, methods: [
                ExportedMethod("Where", in: [ArgumentDescription("n", .uint32)],
                               out: [ArgumentDescription("path", .objectPath), ArgumentDescription("member", .string),
                                     ArgumentDescription("n", .uint32)]) { call in
                    call.reply([.objectPath(call.path), .string(call.member), call.arguments.first ?? .uint32(0)])
                },
                ExportedMethod("Also", in: [ArgumentDescription("n", .uint32)],
                               out: [ArgumentDescription("path", .objectPath), ArgumentDescription("member", .string),
                                     ArgumentDescription("n", .uint32)]) { call in
                    call.reply([.objectPath(call.path), .string(call.member), call.arguments.first ?? .uint32(0)])
                },
                ExportedMethod("Note") { call in
                    notes.post(call.message.noReplyExpected)
                    if !call.message.noReplyExpected { call.reply([]) }
                },
            ])])
        }
    }

    /// Waits for `count` numbered replies and returns their bodies by number.
    static func collect<Number: Hashable & Sendable>(_ count: Int, from answers: Mailbox<(Number, Result<[DBusValue], DBusError>)>)
        async throws -> [Number: [DBusValue]] {
        var replies: [Number: [DBusValue]] = [:]
        for _ in 0..<count {
            let (number, result) = try await answers.next()
            replies[number] = try result.get()
        }
        return replies
    }

    @Test func interleavedCallsToMoreTargetsThanTheCacheHoldsEachReachTheirOwn() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server) = try await openPair(bus)
        let targets = 40  // more than MessageTemplates.capacity: entries are replaced as calls go
        try Self.exportTargets(targets, on: server, notes: Mailbox())
        var sequence: UInt32 = 0
        for round in 0..<3 {
            for step in 0..<targets {
                // Strided, so consecutive calls hit different cached entries.
                let index = (step * 7 + round) % targets
                let member = (step + round) % 2 == 0 ? "Where" : "Also"
                sequence += 1
                let reply = try await client.call(destination: server.uniqueName, path: try ObjectPath("/targets/\(index)"),
                                                  interface: Self.interface, member: member, arguments: [.uint32(sequence)])
                #expect(reply == [.objectPath(try ObjectPath("/targets/\(index)")), .string(member), .uint32(sequence)],
                        "round \(round), call \(step)")
            }
        }
    }

    @Test func aNoReplyCallAndAnAwaitedCallToOneMethodKeepTheirOwnFlag() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server) = try await openPair(bus)
        let notes = Mailbox<Bool>("Note calls")
        try Self.exportTargets(1, on: server, notes: notes)
        var oneWay = DBusMessage.methodCall(destination: server.uniqueName, path: "/targets/0", interface: Self.interface, member: "Note")
        oneWay.noReplyExpected = true
        for _ in 0..<2 {
            try client.send(oneWay)
            #expect(try await notes.next() == true)
            _ = try await client.call(destination: server.uniqueName, path: "/targets/0", interface: Self.interface, member: "Note")
            #expect(try await notes.next() == false)
        }
    }

    @Test func concurrentCallsOnOneTemplateGetTheirOwnReplies() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server) = try await openPair(bus)
        try Self.exportTargets(1, on: server, notes: Mailbox())
        // All sent before the first reply comes back: fifty messages copied from one template.
        let answers = Mailbox<(UInt32, Result<[DBusValue], DBusError>)>("replies")
        for number in UInt32(1)...50 {
            client.callAtOnce(destination: server.uniqueName, path: "/targets/0", interface: Self.interface, member: "Where",
                              arguments: [.uint32(number)]) { answers.post((number, $0)) }
        }
        let replies = try await Self.collect(50, from: answers)
        #expect(replies.count == 50)
        for (number, reply) in replies {
            #expect(reply == [.objectPath("/targets/0"), .string("Where"), .uint32(number)])
        }
    }

    /// Exports `/echo` with `Echo(ay, a{sv}, s, ay) -> (ay, a{sv}, s, ay)`, which answers its
    /// arguments as they arrived.
    static func exportEcho(on server: Connection) {
        let arguments = [ArgumentDescription("first", .array(.byte)), ArgumentDescription("options", .dictionary(key: .string, value: .variant)),
                         ArgumentDescription("note", .string), ArgumentDescription("second", .array(.byte))]
        server.objects.register("/echo", interfaces: [ExportedInterface(interface, methods: [
            ExportedMethod("Echo", in: arguments, out: arguments) { call in call.reply(call.arguments) },
        ])])
    }

    static func echoArguments(first: Data, second: Data, note: String, type: String) -> [DBusValue] {
        [.bytes(first), .dictionary(key: .string, value: .variant, [DBusDictionaryEntry(key: .string("type"), value: .variant(.string(type)))]),
         .string(note), .bytes(second)]
    }

    /// Complete calls are copied from a template with the new bytes written over the old:
    /// each call must carry its own bytes, and a call whose other arguments differ (or whose
    /// arrays have other lengths) must not reuse a template built for different arguments.
    @Test func repeatedCallsWithNewBytesOrOtherArgumentsEachCarryExactlyTheirOwn() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server) = try await openPair(bus)
        Self.exportEcho(on: server)
        var generator = SystemRandomNumberGenerator()
        let lengths = [4, 4, 0, 20, 4, 512, 1, 4]
        for step in 0..<64 {
            let first = Data((0..<lengths[step % lengths.count]).map { _ in UInt8.random(in: 0...255, using: &generator) })
            let second = Data((0..<lengths[(step / 3) % lengths.count]).map { _ in UInt8.random(in: 0...255, using: &generator) })
            let note = step % 5 == 0 ? "rare \(step)" : "usual"
            let type = step % 7 == 0 ? "command" : "request"
            let arguments = Self.echoArguments(first: first, second: second, note: note, type: type)
            let reply = try await client.call(destination: server.uniqueName, path: "/echo", interface: Self.interface,
                                              member: "Echo", arguments: arguments)
            #expect(reply == arguments, "call \(step)")
        }
    }

    /// Fifty calls copied from one complete template before the first reply: each copy has a
    /// body of its own, so none shows another's bytes.
    @Test func concurrentCopiesOfOneCompleteCallKeepTheirOwnBytes() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server) = try await openPair(bus)
        Self.exportEcho(on: server)
        let answers = Mailbox<(UInt8, Result<[DBusValue], DBusError>)>("replies")
        let arguments: (UInt8) -> [DBusValue] = { number in
            Self.echoArguments(first: Data([number, 0xA5, number, 0x5A]), second: Data([0xFF - number]), note: "usual", type: "request")
        }
        for number in UInt8(1)...50 {
            client.callAtOnce(destination: server.uniqueName, path: "/echo", interface: Self.interface, member: "Echo",
                              arguments: arguments(number)) { answers.post((number, $0)) }
        }
        let replies = try await Self.collect(50, from: answers)
        #expect(replies.count == 50)
        for (number, reply) in replies {
            #expect(reply == arguments(number), "call \(number)")
        }
    }
}
