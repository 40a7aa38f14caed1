import BleTestSupport
import Foundation

/// The one way the tests run a source-scanning script of `scripts/` (check-trapping-conversions,
/// check-bluez-names) and build the throw-away trees they plant bad code in.
enum SourceScan {
    /// This repository.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// Runs `scripts/<script> --root <root> <arguments>` off the test pool's threads (a scan reads
    /// every source file) and returns its status with its standard output and error together.
    static func run(_ script: String, root: URL = root, arguments: [String] = []) async throws -> (status: Int32?, output: String) {
        let errors = FileManager.default.temporaryDirectory.appendingPathComponent("\(script)-\(UUID().uuidString).txt")
        defer { try? FileManager.default.removeItem(at: errors) }
        let command = [Self.root.appendingPathComponent("scripts/\(script)").path, "--root", root.path] + arguments
        let child = try ChildProcess(arguments: command, standardErrorPath: errors.path)
        let (status, output) = await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: child.runToCompletion(timeout: 60)) }
        }
        return (status, output + ((try? String(contentsOf: errors, encoding: .utf8)) ?? ""))
    }

    /// A temporary tree holding `files` (path: text), with copies of this repository's `copying`
    /// folders (relative paths) laid down first.
    static func plant(_ files: [String: String], copying: [String] = []) throws -> URL {
        let tree = FileManager.default.temporaryDirectory.appendingPathComponent("source-scan-tree-\(UUID().uuidString)")
        for folder in copying {
            let target = tree.appendingPathComponent(folder)
            try FileManager.default.createDirectory(at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
            try FileManager.default.copyItem(at: root.appendingPathComponent(folder), to: target)
        }
        for (path, text) in files {
            let file = tree.appendingPathComponent(path)
            try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            try text.write(to: file, atomically: true, encoding: .utf8)
        }
        return tree
    }
}
