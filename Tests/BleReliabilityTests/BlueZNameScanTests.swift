import BleTestSupport
import Foundation
import Testing

/// scripts/check-bluez-names (`make test`), issue 27's rule that BlueZVocabulary is the only
/// spelling of BlueZ's names: the sources pass, and a planted spelling fails, named by file and
/// line with the constant to use instead. A scan that passed everything would fail here.
@Suite struct BlueZNameScanTests {
    /// Runs the scan over `root` (default: this repository) with its reviewed list.
    static func scan(root: URL = SourceScan.root) async throws -> (status: Int32?, output: String) {
        try await SourceScan.run("check-bluez-names", root: root)
    }

    /// A tree holding the real vocabulary, `files` (path: text) and `allowed` as the reviewed list.
    static func plant(_ files: [String: String], allowed: String = "") throws -> URL {
        try SourceScan.plant(files.merging(["scripts/bluez-names.allowed": allowed], uniquingKeysWith: { $1 }),
                             copying: ["Sources/BlueZVocabulary"])
    }

    @Test func theSourcesPassTheScan() async throws {
        let (status, output) = try await Self.scan()
        #expect(status == 0, "\(output)")
        #expect(output.contains("check-bluez-names: ok"), "\(output)")
    }

    @Test func aSecondSpellingOfABlueZNameFailsWithItsConstant() async throws {
        let tree = try Self.plant(["Sources/BleCore/Planted.swift": """
            // "StartDiscovery" in a comment is not code.
            let call = "StopNotify"
            let path = "\\(adapter)/org/bluez"
            let error = #"org.bluez.Error.Failed"#
            let unknown = "org.bluez.NotYetInTheVocabulary1"
            let sentence = "a \\"Connected\\" device"
            """])
        defer { try? FileManager.default.removeItem(at: tree) }
        let (status, output) = try await Self.scan(root: tree)
        #expect(status == 1, "\(output)")
        #expect(output.contains("Sources/BleCore/Planted.swift:2: \"StopNotify\" is BlueZ's name: use its BlueZVocabulary constant (BlueZ+GattClient.swift:"),
                "\(output)")
        #expect(output.contains("Planted.swift:3: \"/org/bluez\""), "a piece of an interpolated literal: \(output)")
        #expect(output.contains("Planted.swift:4: \"org.bluez.Error.Failed\""), "a raw literal: \(output)")
        #expect(output.contains("Planted.swift:5: \"org.bluez.NotYetInTheVocabulary1\" is BlueZ's name: add a documented constant"),
                "\(output)")
        #expect(!output.contains("Planted.swift:1:") && !output.contains("Planted.swift:6:"), "\(output)")
        #expect(output.contains("FAILED: 4 problem(s)"), "\(output)")
    }

    @Test func aReviewedWordPassesAndAStaleLineFails() async throws {
        let tree = try Self.plant(["Sources/BleGateway/Format.swift": #"let pairs = [("read", value), ("offset", at)]"#], allowed: """
            # reviewed
            Sources/BleGateway/Format.swift: "read"  # a JSON key of the gateway's own format
            Sources/BleGateway/Format.swift: "offset"  # a JSON key of the gateway's own format
            Sources/BleGateway/Format.swift: "write"  # no longer there
            """)
        defer { try? FileManager.default.removeItem(at: tree) }
        let (status, output) = try await Self.scan(root: tree)
        #expect(status == 1, "\(output)")
        #expect(output.contains("scripts/bluez-names.allowed:4: Sources/BleGateway/Format.swift has no \"write\" any more: remove the line"),
                "\(output)")
        #expect(output.contains("FAILED: 1 problem(s)"), "\(output)")
    }
}
