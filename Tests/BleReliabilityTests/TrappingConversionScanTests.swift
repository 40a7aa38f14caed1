import BleTestSupport
import Foundation
import Testing

/// scripts/check-trapping-conversions (`make test`), issue 25's rule that outside data never
/// reaches a trapping API: the sources pass, and each kind of planted bad site fails, named by
/// file and line with what to use instead. A scan that passed everything would fail here.
@Suite struct TrappingConversionScanTests {
    static let root = SourceScan.root

    /// Runs the scan over `root` (default: this repository) with its reviewed list.
    static func scan(root: URL = root, allowed: String? = nil) async throws -> (status: Int32?, output: String) {
        try await SourceScan.run("check-trapping-conversions", root: root, arguments: allowed.map { ["--allowed", $0] } ?? [])
    }

    /// A tree holding only `files` (path: text), with an empty reviewed list unless one is given.
    static func plant(_ files: [String: String], allowed: String = "") throws -> URL {
        try SourceScan.plant(files.merging(["scripts/trapping-conversions.allowed": allowed], uniquingKeysWith: { $1 }))
    }

    @Test func theSourcesPassTheScan() async throws {
        let (status, output) = try await Self.scan()
        #expect(status == 0, "\(output)")
        #expect(output.contains("check-trapping-conversions: ok"), "\(output)")
    }

    @Test func aUUIDInitOnTextFailsAnywhereInSources() async throws {
        let tree = try Self.plant(["Sources/BleIntegration/Planted.swift": """
            // BluetoothUUID(string: text) in a comment is not code.
            let fine = BluetoothUUID(string: "180d")
            let message = "CBUUID(string: text) inside a string is not code"
            let bad = BluetoothUUID(string: text)
            let worse = CBUUID(string: "\\(prefix)-0000")
            """])
        defer { try? FileManager.default.removeItem(at: tree) }
        let (status, output) = try await Self.scan(root: tree)
        #expect(status == 1, "\(output)")
        #expect(output.contains("Sources/BleIntegration/Planted.swift:4: BluetoothUUID(string: text) traps on bad text"), "\(output)")
        #expect(output.contains("use `BluetoothUUID(text)` (nil on bad text) or `try BluetoothUUID(parsing: text)`"), "\(output)")
        #expect(output.contains("Planted.swift:5: CBUUID(string:"), "an interpolated literal is not a literal: \(output)")
        #expect(!output.contains("Planted.swift:1:") && !output.contains("Planted.swift:2:") && !output.contains("Planted.swift:3:"), "\(output)")
        #expect(output.contains("FAILED: 2 problem(s)"), "\(output)")
    }

    @Test func anUnreviewedIntegerConversionInDoorCodeFails() async throws {
        let door = """
            let safe = [Int(exactly: seconds), Int(clamping: count), Int(truncatingIfNeeded: raw), Int(bitPattern: raw)]
            let parsed = UInt16(text, radix: 16)
            let literals = [Int(0x10), Int32(UInt8(ascii: "y")), UInt8(-1 + 2)]
            let bad = Int(seconds * 1000)
            let interpolated = "\\(UInt8(count)) bytes"
            let forced = Int(exactly: seconds)!
            """
        let tree = try Self.plant(["Sources/BleGateway/Commands/Planted.swift": door, "Sources/BleDSL/NotADoor.swift": "let x = Int(seconds)"])
        defer { try? FileManager.default.removeItem(at: tree) }
        let (status, output) = try await Self.scan(root: tree)
        #expect(status == 1, "\(output)")
        #expect(output.contains("Sources/BleGateway/Commands/Planted.swift:4: Int(seconds * 1000) traps if the value does not fit"), "\(output)")
        #expect(output.contains("use `Int(exactly:)` (nil), `Int(clamping:)` or a typed error"), "\(output)")
        #expect(output.contains("add `Sources/BleGateway/Commands/Planted.swift | Int(seconds * 1000) | why it cannot trap` to scripts/trapping-conversions.allowed"), "\(output)")
        #expect(output.contains("Planted.swift:5: UInt8(count)"), "code inside an interpolation is code: \(output)")
        #expect(output.contains("Planted.swift:6: Int(exactly: seconds)! traps where the plain conversion would"), "\(output)")
        #expect(output.contains("Planted.swift:3: UInt8(-1 + 2)"), "arithmetic is not a literal: \(output)")
        #expect(!output.contains("NotADoor"), "only door code is held to the list: \(output)")
        #expect(output.contains("FAILED: 4 problem(s)"), "\(output)")
    }

    @Test func aReviewedSitePassesAndAStaleLineFails() async throws {
        let path = "Sources/BleSim/Model/Planted.swift"
        let reviewed = "# reviewed\n\(path) | Int(mtu) | widening: mtu is UInt16\n\(path) | Int32(MSG_DONTWAIT | MSG_NOSIGNAL) | Glibc constants\n"
        let tree = try Self.plant([path: "let a = Int(mtu) - 3\nlet b = Int(  mtu  )\nlet c = Int32(MSG_DONTWAIT | MSG_NOSIGNAL)"], allowed: reviewed)
        defer { try? FileManager.default.removeItem(at: tree) }
        let passing = try await Self.scan(root: tree)
        #expect(passing.status == 0 && passing.output.contains("3 reviewed integer conversion(s)"), "\(passing.output)")
        try "let c = Int32(MSG_DONTWAIT | MSG_NOSIGNAL)".write(to: tree.appendingPathComponent(path), atomically: true, encoding: .utf8)
        let stale = try await Self.scan(root: tree)
        #expect(stale.status == 1 && stale.output.contains("scripts/trapping-conversions.allowed:2: \(path) has no `Int(mtu)` any more: remove the line"), "\(stale.output)")
    }
}
