import BleTestSupport
import Foundation
import Testing

/// scripts/check-doc-comments, which `make test` runs first: it passes on Sources/ and fails on
/// a public symbol without a doc comment.
@Suite struct DocumentationCheckTests {
    static var root: URL { URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent() }

    static func check(_ path: String) async throws -> (status: Int32?, output: String) {
        let script = root.appendingPathComponent("scripts/check-doc-comments").path
        let errors = FileManager.default.temporaryDirectory.appendingPathComponent("doc-check-\(UUID().uuidString)").path
        let child = try ChildProcess(arguments: ["/usr/bin/python3", script, path], standardErrorPath: errors)
        let result = await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: child.runToCompletion(timeout: 60)) }
        }
        defer { try? FileManager.default.removeItem(atPath: errors) }
        return (result.status, result.output + ((try? String(contentsOfFile: errors, encoding: .utf8)) ?? ""))
    }

    @Test func everyPublicSymbolInSourcesIsDocumented() async throws {
        let (status, output) = try await Self.check(Self.root.appendingPathComponent("Sources").path)
        #expect(status == 0, "\(output)")
    }

    @Test func anUndocumentedPublicSymbolFailsTheCheck() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("doc-check-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try Data("/// Documented.\npublic struct Fine {\n    @MainActor\n    public static func missing() {}\n}\n".utf8)
            .write(to: folder.appendingPathComponent("Sample.swift"))
        let (status, output) = try await Self.check(folder.path)
        #expect(status == 1, "\(output)")
        #expect(output.contains("Sample.swift:4: public symbol without a doc comment: public static func missing()"), "\(output)")
    }
}
