import BleTestSupport
import Foundation
import Testing

/// scripts/check-doc-snippets (which `make test` runs over the documentation) on fixture
/// documents: it passes good blocks, and fails, naming the document's line, on each kind of
/// bad one. A checker that passed everything would fail these tests.
@Suite struct DocSnippetCheckTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// Runs the check on one fixture against the modules this test binary was built with.
    /// Off the test pool's threads: the compilers take seconds, and the pool has a thread a core.
    static func check(_ fixture: String) async throws -> (status: Int32?, output: String) {
        let me = URL(fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0])
        let errors = FileManager.default.temporaryDirectory.appendingPathComponent("doc-snippets-\(UUID().uuidString).txt")
        defer { try? FileManager.default.removeItem(at: errors) }
        let child = try ChildProcess(arguments: [root.appendingPathComponent("scripts/check-doc-snippets").path,
                                                 "--bin-path", me.deletingLastPathComponent().path,
                                                 root.appendingPathComponent("Tests/DocSnippetTests/Fixtures/\(fixture)").path],
                                     standardErrorPath: errors.path)
        let (status, output) = await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: child.runToCompletion(timeout: 120)) }
        }
        return (status, output + ((try? String(contentsOf: errors, encoding: .utf8)) ?? ""))
    }

    @Test func goodBlocksPassInTheirModesWithTheirPreludes() async throws {
        let (status, output) = try await Self.check("good.md")
        #expect(status == 0, "\(output)")
        #expect(output.contains("ok: 2 Swift block(s) in 1 file(s) compiled (2 compilations), 1 skipped on purpose, 1 shell block(s) checked"), "\(output)")
        #expect(output.contains("good.md:34: not compiled on purpose: shows the error the compiler gives"), "\(output)")
    }

    @Test func aSnippetThatDoesNotCompileFailsAtItsLine() async throws {
        let (status, output) = try await Self.check("broken.md")
        #expect(status == 1, "\(output)")
        #expect(output.contains("broken.md:5: ```swift block does not compile (swift 6 mode)"), "\(output)")
        #expect(output.contains("broken.md:10:27: error: call can throw but is not marked with 'try'"), "\(output)")
        #expect(output.contains("FAILED: 1 block(s) do not compile"), "\(output)")
    }

    @Test func swift6IsTheDefaultMode() async throws {
        let (status, output) = try await Self.check("swift6.md")
        #expect(status == 1, "\(output)")
        #expect(output.contains("swift6.md:9:32: error: main actor-isolated var 'counter' can not be mutated"), "\(output)")
        // mode=5+6: compiled twice, refused by Swift 6 only.
        #expect(output.contains("(2 Swift block(s) in 1 file(s) compiled (3 compilations)"), "\(output)")
        #expect(output.contains("swift6.md:16: ```swift block does not compile (swift 6 mode)"), "\(output)")
        #expect(output.contains("swift6.md:20:32: error: main actor-isolated var 'total' can not be mutated"), "\(output)")
        #expect(!output.contains("(swift 5 mode)"), "\(output)")
    }

    @Test func aManifestIsCheckedAgainstPackageDescription() async throws {
        let (status, output) = try await Self.check("manifest.md")
        #expect(status == 1, "\(output)")
        #expect(output.contains("manifest.md:20:67: error: type 'Target.Dependency' has no member 'produkt'"), "\(output)")
        #expect(output.contains("FAILED: 1 block(s) do not compile"), "\(output)")
    }

    @Test func aWarningFails() async throws {
        let (status, output) = try await Self.check("warning.md")
        #expect(status == 1, "\(output)")
        #expect(output.contains("warning.md:5:9: error: variable 'total' was never mutated"), "\(output)")
    }

    /// The old `didAdd service: MutableService` compiles (the protocol's default is the witness)
    /// and is never called; the compiler warns only in the extension form, scripts/check-ios-port
    /// names all three, at the document's lines.
    @Test func aDelegateMethodBleKitNeverCallsFails() async throws {
        let (status, output) = try await Self.check("nearmiss.md")
        #expect(status == 1, "\(output)")
        for expected in ["nearmiss.md:10: peripheralManager(_:didAdd:error:) has parameter types (CBPeripheralManager, CBMutableService, Error?) that differ from Apple's, so it compiles as an unrelated method and is never called",
                         "nearmiss.md:23: peripheralManager(_:central:didSubscribeTo:) has parameter types (CBPeripheralManager, CBCentral, CBMutableCharacteristic)",
                         "nearmiss.md:35: peripheralManager(_:didAdd:error:) has parameter types (CBPeripheralManager, CBMutableService, Error?)",
                         "nearmiss.md:23:10: error: instance method 'peripheralManager(_:central:didSubscribeTo:)' nearly matches defaulted requirement",
                         "FAILED: 1 block(s) do not compile, 3 other problem(s)"] {
            #expect(output.contains(expected), "missing \(expected)\n\(output)")
        }
        #expect(!output.contains("nearmiss.md:36:"), "CBCharacteristic is Apple's type: that one is called\n\(output)")
    }

    @Test func markersAndShellBlocksAreChecked() async throws {
        let (status, output) = try await Self.check("problems.md")
        #expect(status == 1, "\(output)")
        for expected in ["problems.md:3: code block without a language",
                         "problems.md:8: `snippet: skip` needs a reason",
                         "problems.md:13: unknown snippet marker item 'mode=7'",
                         "problems.md:18: no prelude docs/snippet-preludes/no-such-prelude.swift",
                         "problems.md:22: snippet marker is not just above a code block",
                         "problems.md:27: `make no-such-target`: the Makefile has no target no-such-target",
                         "problems.md:28: `swift run NoSuchProduct`: Package.swift has no executable NoSuchProduct",
                         "problems.md:29: `blekit scan` has no option --no-such-option",
                         "problems.md:30: `blekit frobnicate` is not a blekit command",
                         "problems.md:33: `make no-such-inline-target`: the Makefile has no target no-such-inline-target",
                         "problems.md:33: `blekit gatt` has no option --no-such-option",
                         "problems.md:37: `./scripts/no-such-script`: no such executable in the repository"] {
            #expect(output.contains(expected), "missing \(expected)\n\(output)")
        }
        #expect(!output.contains("problems.md:36:"), "scripts/check-ios-port exists\n\(output)")
    }
}
