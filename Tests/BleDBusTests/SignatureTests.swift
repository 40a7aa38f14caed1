import BleDBus
import Testing

@Suite struct SignatureTests {
    @Test(arguments: [
        ("a{sv}", [DBusType.dictionary(key: .string, value: .variant)]),
        ("a{oa{sa{sv}}}", [.dictionary(key: .objectPath, value: .dictionary(key: .string, value: .dictionary(key: .string, value: .variant)))]),
        ("(ii)", [.structure([.int32, .int32])]),
        ("aay", [.array(.array(.byte))]),
        ("ybnqiuxtdsogh", [.byte, .boolean, .int16, .uint16, .int32, .uint32, .int64, .uint64, .double, .string,
                           .objectPath, .signature, .unixFD]),
        ("a(sv)v", [.array(.structure([.string, .variant])), .variant]),
        ("", []),
    ])
    func validSignaturesParseToTheirTypes(signature: String, expected: [DBusType]) throws {
        #expect(try DBusType.parse(signature) == expected)
    }

    @Test(arguments: ["a{sv}", "a{oa{sa{sv}}}", "(ii)", "aay", "a(yqa{s(ab)})", "a{ta{y(hv)}}"])
    func parsedTypesWriteBackTheSameSignature(signature: String) throws {
        #expect(try DBusType.parse(signature).map(\.signature).joined() == signature)
    }

    @Test(arguments: [
        ("a", DBusSignatureError.truncated(offset: 1)),
        ("(", .truncated(offset: 1)),
        ("(ii", .truncated(offset: 3)),
        ("()", .emptyStructure(offset: 0)),
        ("a{vs}", .invalidDictionaryEntry(offset: 1)),
        ("a{(i)s}", .invalidDictionaryEntry(offset: 1)),
        ("a{s}", .invalidDictionaryEntry(offset: 1)),
        ("a{sss}", .invalidDictionaryEntry(offset: 1)),
        ("{sv}", .invalidDictionaryEntry(offset: 0)),
        ("z", .unknownTypeCode(character: "z", offset: 0)),
        ("ssz", .unknownTypeCode(character: "z", offset: 2)),
        (")", .unbalanced(offset: 0)),
        ("i}", .unbalanced(offset: 1)),
    ])
    func invalidSignaturesNameTheirProblem(signature: String, expected: DBusSignatureError) {
        #expect(throws: expected) { try DBusType.parse(signature) }
    }

    @Test func signaturesLongerThan255BytesAreRefused() throws {
        #expect(throws: DBusSignatureError.tooLong(length: 256)) { try DBusType.parse(String(repeating: "i", count: 256)) }
        #expect(try DBusType.parse(String(repeating: "i", count: 255)).count == 255)
    }

    @Test func thirtyTwoNestedArraysAreTheLimit() throws {
        let deepest = String(repeating: "a", count: 32) + "i"
        #expect(try DBusType.parseSingle(deepest) == Nesting.arrays(depth: 32).type)
        #expect(throws: DBusSignatureError.nestedTooDeep(offset: 32)) {
            try DBusType.parse(String(repeating: "a", count: 33) + "i")
        }
    }

    @Test func thirtyTwoNestedStructuresAreTheLimit() throws {
        let deepest = String(repeating: "(", count: 32) + "i" + String(repeating: ")", count: 32)
        #expect(try DBusType.parseSingle(deepest) == Nesting.structures(depth: 32).type)
        #expect(throws: DBusSignatureError.nestedTooDeep(offset: 32)) {
            try DBusType.parse(String(repeating: "(", count: 33) + "i" + String(repeating: ")", count: 33))
        }
    }

    @Test func parseSingleRefusesTwoTypes() {
        #expect(throws: DBusSignatureError.notSingleCompleteType(signature: "ii")) { try DBusType.parseSingle("ii") }
        #expect(throws: DBusSignatureError.notSingleCompleteType(signature: "")) { try DBusType.parseSingle("") }
    }

    @Test func signatureValuesValidateTheirText() throws {
        #expect(try DBusSignature("a{sv}as").types == [.dictionary(key: .string, value: .variant), .array(.string)])
        #expect(throws: DBusSignatureError.emptyStructure(offset: 1)) { try DBusSignature("a()") }
        #expect(DBusSignature(types: [.array(.byte), .variant]).rawValue == "ayv")
    }

    @Test func signatureErrorsDescribeTheOffset() {
        let description = DBusSignatureError.unknownTypeCode(character: "z", offset: 2).description
        #expect(description.contains("'z'") && description.contains("offset 2"))
    }
}
