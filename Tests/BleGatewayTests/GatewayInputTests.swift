@testable import BleGateway
import BleCore
import Foundation
import Testing

/// Bad input from the air and from the broker never traps: decoders, the JSON reader and the
/// command parser on truncated, random and hostile data.
struct GatewayInputTests {
    @Test func jsonRoundTripKeepsOrderAndKinds() throws {
        let text = #"{"b":1,"a":[true,null,-2.5,"x\"\u00e9\n"],"c":{"d":12345678901}}"#
        let value = try #require(JSONValue.parse(Data(text.utf8)))
        #expect(value["a"] == .array([.bool(true), .null, .number(-2.5), .string("x\"é\n")]))
        #expect(value["c"]?["d"] == .integer(12345678901))
        #expect(JSONValue.parse(value.data) == value)
        #expect(value.text.hasPrefix(#"{"b":1,"a""#))
    }

    @Test func serialisedStringsEscapeExactlyWhatJSONNeeds() {
        let value: JSONValue = .object([("k\"ey", .string("a\"b\\c\n\r\t\u{01}\u{1f}é\u{7f}😀")), ("n", .integer(-42)), ("x", .number(2.0)), ("y", .number(0.5))])
        #expect(value.text == #"{"k\"ey":"a\"b\\c\n\r\t\u0001\u001fé\#u{7f}😀","n":-42,"x":2,"y":0.5}"#)
        // Read back, the integral 2.0 is an integer: compare the text.
        #expect(JSONValue.parse(value.data)?.text == value.text)
        #expect(Data([0x00, 0x0f, 0xa5, 0xff]).lowercaseHex == "000fa5ff")
        #expect(Data().lowercaseHex == "")
    }

    @Test func addressesAndTopicsAreCanonical() {
        #expect(AdvertisementMessage.canonical("aa:bb:cc:dd:ee:0f") == "AA:BB:CC:DD:EE:0F")
        #expect(AdvertisementMessage.canonical("AA:BB:CC:DD:EE:0F") == "AA:BB:CC:DD:EE:0F")
        let message = AdvertisementMessage(address: "de:ad:be:ef:00:01", rssi: -60, advertisement: AdvertisementData())
        #expect(message.address == "DE:AD:BE:EF:00:01")
        #expect(message.topicID == "DEADBEEF0001")
    }

    @Test func hostileJSONIsRefusedNotTrapped() {
        let nested = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        for text in ["", "{", "{\"a\":}", "[1,]", "\"\\u12\"", "\"\\ud800\"", "-", "1e999999", nested, "{\"a\":1} x", "nul", "\u{0}"] {
            _ = JSONValue.parse(Data(text.utf8))
        }
        #expect(JSONValue.parse(Data(nested.utf8)) == nil)
        #expect(JSONValue.parse(Data("\"\\ud800\"".utf8)) == .string("\u{FFFD}"))
    }

    @Test func commandsWithHostileValuesAreParsedSafely() {
        let commands = [
            #"{"ble_write_address":"AA:BB:CC:DD:EE:FF","ble_write_service":"fff0","ble_write_char":"fff1","ble_write_value":"0","value_type":"INT","ttl":9223372036854775807}"#,
            #"{"ble_write_address":"AA:BB:CC:DD:EE:FF","ble_write_service":"fff0","ble_write_char":"fff1","ble_write_value":1e308,"value_type":"FLOAT"}"#,
            #"{"ble_write_address":"AA","ble_write_service":"fff0","ble_write_char":"fff1","ble_write_value":"abc","value_type":"HEX"}"#,
            #"{"ble_read_address":"AA:BB:CC:DD:EE:FF"}"#,
            #"{"cmd":"x"}"#,
            #"{"value_type":"BINARY","ble_read_address":"A","ble_read_service":"1","ble_read_char":"2"}"#,
        ]
        for text in commands {
            guard let command = JSONValue.parse(Data(text.utf8)) else { Issue.record("unparsed \(text)"); continue }
            _ = GattRequest.parse(command, operations: [])
        }
        // Refused with its path, not clamped without a word (issue 25).
        let ttl = GattRequest.parse(JSONValue.parse(Data(commands[0].utf8)) ?? .null, operations: [])
        guard case .failure(let error)? = ttl else { Issue.record("a ttl of Int.max was accepted"); return }
        #expect(error.code == "invalid_field")
        #expect(error.path == "ttl")
    }

    @Test func decodersSurviveRandomAndTruncatedFrames() {
        var generator = SystemRandomNumberGenerator()
        let samples = [Data(hex: "40000101640259090337130c9c0b"), Data(hex: "20000bb81a800000000a00000064"), Data(hex: "10f503626c656b697407"),
                       Data(hex: "00f500112233445566778899aabbccddeeff"), Data(hex: "0215e2c56db5dffb48d2b060d0f5a71096e000010002c5")].compactMap { $0 }
        for sample in samples {
            for length in 0...sample.count {
                let prefix = sample.prefix(length)
                _ = BTHomeDecoder.decode(prefix)
                _ = EddystoneDecoder.decode(prefix)
                _ = IBeaconDecoder.decode(company: 0x004C, payload: prefix)
            }
        }
        for _ in 0..<5_000 {
            let length = Int.random(in: 0...40, using: &generator)
            let bytes = Data((0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) })
            _ = BTHomeDecoder.decode(Data([0x40]) + bytes)
            _ = BTHomeDecoder.decode(bytes)
            _ = EddystoneDecoder.decode(bytes)
            _ = SIGServiceDataDecoder.decode(uuid: [0x180F, 0x2A6E, 0x2A6F, 0x2A6D].randomElement(using: &generator) ?? 0x180F, bytes)
            _ = IBeaconDecoder.decode(company: 0x004C, payload: bytes)
            let spec = OperationCommandSpec(name: "n", service: "1", write: "2", notify: "3", command: "00", responseLength: 1,
                                            fields: [.init(key: "k", offset: Int.random(in: -5...Int.max, using: &generator), size: Int.random(in: -1...9, using: &generator))])
            _ = spec.parse(bytes)
        }
        // Encrypted BTHome is reported as such, not decoded as garbage.
        #expect(BTHomeDecoder.decode(Data([0x41, 0x01, 0x02, 0x03]))?.fields.first?.0 == "encr")
    }
}
