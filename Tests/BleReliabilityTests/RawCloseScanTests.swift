import BleTestSupport
import Foundation
import Testing

/// scripts/check-raw-closes (`make test`), issue 27's rule that a descriptor is closed by the
/// value that owns it: the sources pass, and a planted `close(fd)` fails with its place, while
/// a method named close and a reviewed file do not.
@Suite struct RawCloseScanTests {
    @Test func theSourcesPassTheScan() async throws {
        let (status, output) = try await SourceScan.run("check-raw-closes")
        #expect(status == 0, "\(output)")
        #expect(output.contains("check-raw-closes: ok"), "\(output)")
    }

    @Test func aRawCloseOfADescriptorFailsWithItsPlace() async throws {
        let tree = try SourceScan.plant([
            "Sources/BleCore/Planted.swift": """
                func end(_ descriptor: Int32, socket: SeqPacketSocket) {
                    socket.close()
                    // close(descriptor) in a comment is not code.
                    Glibc.close(descriptor)
                    _ = close(descriptor)
                }
                """,
            "Sources/BleSim/Reviewed.swift": "func end(_ fd: Int32) { close(fd) }\n",
            "scripts/raw-closes.allowed": "Sources/BleSim/Reviewed.swift: planted and reviewed\n",
        ])
        defer { try? FileManager.default.removeItem(at: tree) }
        let (status, output) = try await SourceScan.run("check-raw-closes", root: tree)
        #expect(status == 1, "\(output)")
        #expect(output.contains("Sources/BleCore/Planted.swift:4: a raw close"), "\(output)")
        #expect(output.contains("Sources/BleCore/Planted.swift:5: a raw close"), "\(output)")
        #expect(!output.contains("Planted.swift:2:") && !output.contains("Planted.swift:3:"), "a method call or a comment counted: \(output)")
        #expect(!output.contains("Reviewed.swift"), "a reviewed file counted: \(output)")
        #expect(output.contains("2 raw close(s)"), "\(output)")
    }
}
