import BleDBus
import Foundation
import Testing

/// `DBusMessage(wireBytes:)` on bytes that are not a valid message throws
/// `DBusError.malformedMessage`, whatever the bytes: it never traps or aborts.
@Suite struct MalformedMessageTests {
    static func sampleMessage() -> DBusMessage {
        var message = DBusMessage.methodCall(
            destination: "org.bluez", path: "/org/bluez/hci0", interface: "org.freedesktop.DBus.Properties",
            member: "Set", body: [.string("org.bluez.Adapter1"), .string("Powered"), .variant(.boolean(true))])
        message.serial = 7
        return message
    }

    static func sampleBytes() throws -> Data { try sampleMessage().wireBytes() }

    /// The parse result, as a `DBusError` or the message; any other error is recorded.
    static func parse(_ bytes: Data) -> Result<DBusMessage, DBusError> {
        Result { () throws(DBusError) -> DBusMessage in try DBusMessage(wireBytes: bytes) }
    }

    static func isMalformed(_ result: Result<DBusMessage, DBusError>) -> Bool {
        if case .failure(.malformedMessage) = result { return true }
        return false
    }

    @Test func wireBytesParseBackIntoTheSameMessage() throws {
        let parsed = try DBusMessage(wireBytes: try Self.sampleBytes())
        #expect(parsed.kind == .methodCall)
        #expect(parsed.serial == 7)
        #expect(parsed.destination == "org.bluez")
        #expect(parsed.path == "/org/bluez/hci0")
        #expect(parsed.interface == "org.freedesktop.DBus.Properties")
        #expect(parsed.member == "Set")
        #expect(parsed.signature == "ssv")
        #expect(parsed.body == Self.sampleMessage().body)
    }

    @Test func everyTruncationOfAValidMessageIsMalformed() throws {
        let bytes = try Self.sampleBytes()
        for length in 0..<bytes.count {
            let result = Self.parse(Data(bytes.prefix(length)))
            #expect(Self.isMalformed(result), "\(length) of \(bytes.count) bytes gave \(result)")
        }
    }

    @Test func truncatedBytesSayTheyAreIncomplete() throws {
        let bytes = try Self.sampleBytes()
        let result = Self.parse(Data(bytes.prefix(bytes.count - 3)))
        guard case .failure(.malformedMessage(let reason)) = result else {
            Issue.record("expected malformedMessage, got \(result)")
            return
        }
        // Not libdbus's "Not enough memory", which it reports for any incomplete buffer.
        #expect(reason.contains("truncated"), "\(reason)")
        #expect(!reason.localizedCaseInsensitiveContains("memory"), "\(reason)")
    }

    @Test func randomGarbageIsMalformed() {
        var random = SplitMix64(seed: 0xB1E_C0DE)
        for round in 0..<2000 {
            let count = Int.random(in: 0..<300, using: &random)
            var bytes = Data((0..<count).map { _ in UInt8.random(in: 0...255, using: &random) })
            // Half of the buffers start like a real little-endian v1 message, to get past the
            // first checks and into the header and body validation.
            if round % 2 == 0, bytes.count >= 4 {
                bytes[0] = UInt8(ascii: "l")
                bytes[1] = UInt8.random(in: 1...4, using: &random)
                bytes[3] = 1
            }
            let result = Self.parse(bytes)
            #expect(Self.isMalformed(result), "round \(round): \(result)")
        }
    }

    @Test func corruptedBytesOfAValidMessageParseOrFailAsMalformed() throws {
        let original = try Self.sampleBytes()
        var random = SplitMix64(seed: 42)
        var malformed = 0
        for round in 0..<3000 {
            var bytes = original
            for _ in 0..<Int.random(in: 1...3, using: &random) {
                bytes[Int.random(in: 0..<bytes.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
            }
            switch Self.parse(bytes) {
            case .success:
                continue // e.g. a changed letter in a name: still a valid message
            case .failure(.malformedMessage):
                malformed += 1
            case .failure(let other):
                Issue.record("round \(round): expected malformedMessage, got \(other)")
            }
        }
        #expect(malformed > 1000)
    }

    @Test(arguments: [UInt8(ascii: "X"), 0, UInt8(ascii: "L")])
    func anUnknownEndiannessByteIsMalformed(marker: UInt8) throws {
        var bytes = try Self.sampleBytes()
        #expect(bytes[0] == UInt8(ascii: "l"))
        bytes[0] = marker
        #expect(Self.isMalformed(Self.parse(bytes)))
    }

    @Test func theOppositeEndiannessByteIsMalformed() throws {
        var bytes = try Self.sampleBytes()
        bytes[0] = UInt8(ascii: "B")
        #expect(Self.isMalformed(Self.parse(bytes)))
    }

    @Test func anUnknownProtocolVersionIsMalformed() throws {
        var bytes = try Self.sampleBytes()
        bytes[3] = 2
        #expect(Self.isMalformed(Self.parse(bytes)))
    }

    /// The bytes of a message whose body is one string, and the offset of the `s` in its
    /// SIGNATURE header field (code 8, type `g`, value length 1).
    static func stringMessage() throws -> (Data, Int) {
        var signal = DBusMessage.signal(path: "/p", interface: "com.example.I", member: "M", body: [.string("hi")])
        signal.serial = 1
        let bytes = try signal.wireBytes()
        let field: [UInt8] = [8, 1, UInt8(ascii: "g"), 0, 1, UInt8(ascii: "s"), 0]
        guard let range = bytes.firstRange(of: Data(field)) else {
            throw DBusError.malformedMessage("no SIGNATURE field found in the sample")
        }
        return (bytes, range.lowerBound + 5)
    }

    @Test func anInvalidBodySignatureIsMalformed() throws {
        var (bytes, offset) = try Self.stringMessage()
        bytes[offset] = UInt8(ascii: "z")
        #expect(Self.isMalformed(Self.parse(bytes)))
    }

    @Test func aBodySignatureThatDoesNotFitTheBodyIsMalformed() throws {
        var (bytes, offset) = try Self.stringMessage()
        #expect(Self.parse(bytes).map(\.body) == .success([.string("hi")]))
        // "hi" is 4 + 2 + 1 bytes: read as a u, 3 bytes would be left over.
        bytes[offset] = UInt8(ascii: "u")
        #expect(Self.isMalformed(Self.parse(bytes)))
    }

    @Test func malformedMessageErrorsSayWhatIsWrong() throws {
        var bytes = try Self.sampleBytes()
        bytes[0] = UInt8(ascii: "X")
        guard case .failure(let error) = Self.parse(bytes) else {
            Issue.record("garbage parsed")
            return
        }
        #expect(error.description.hasPrefix("Malformed D-Bus message: "))
        #expect(error.description.count > "Malformed D-Bus message: ".count)
    }
}
