import BleFuzzTargets
import Foundation

// Built twice. With -DBLEKIT_FUZZING (make fuzz) libFuzzer supplies main and calls the entry
// point below; BLEKIT_FUZZ_TARGET names the target. Without it this is a replayer:
// `blekit-fuzz TARGET FILE...` runs each file once and exits non-zero on a bad target name.
#if BLEKIT_FUZZING
let selected: FuzzTarget = {
    let name = ProcessInfo.processInfo.environment["BLEKIT_FUZZ_TARGET"] ?? ""
    guard let target = FuzzTarget(rawValue: name) else {
        FileHandle.standardError.write(Data("BLEKIT_FUZZ_TARGET must be one of \(FuzzTarget.allCases.map(\.rawValue))\n".utf8))
        exit(2)
    }
    return target
}()

/// libFuzzer's entry point: one input through the selected target.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    guard let start else { return 0 }
    selected.run(Data(bytes: start, count: count))
    return 0
}

@_silgen_name("LLVMFuzzerRunDriver")
func runFuzzerDriver(_ argc: UnsafeMutablePointer<CInt>,
                     _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
                     _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> CInt

/// SwiftPM links an executable's main under the module's name (`main` is defined as an alias
/// of it), so libFuzzer's own main is never pulled in: this one hands over to libFuzzer.
@_cdecl("blekit_fuzz_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    // The seeds go into the corpus folder (BLEKIT_FUZZ_SEEDS names it) whenever they are not
    // there, not only into an empty one: a corpus grown before a target had seeds never got
    // them, and libFuzzer then spent its runs on bytes libdbus refuses (103 edges covered).
    if let folder = ProcessInfo.processInfo.environment["BLEKIT_FUZZ_SEEDS"] {
        for (index, seed) in selected.seeds.enumerated() {
            let path = "\(folder)/seed-\(index)"
            guard FileManager.default.contents(atPath: path) != seed else { continue }
            // A seed that cannot be written only starts the fuzzer further from BleKit's code:
            // said, not fatal.
            if !FileManager.default.createFile(atPath: path, contents: seed) {
                FileHandle.standardError.write(Data("blekit-fuzz: cannot write seed \(index) into \(folder)\n".utf8))
            }
        }
    }
    var count = argc
    var vector = argv
    return runFuzzerDriver(&count, &vector) { start, length in fuzzOne(start, length) }
}
#else
/// Replays inputs through a target, as the regression tests do.
@main
struct FuzzReplayer {
    static func main() {
        let arguments = CommandLine.arguments.dropFirst()
        guard let name = arguments.first, let target = FuzzTarget(rawValue: name) else {
            print("usage: blekit-fuzz \(FuzzTarget.allCases.map(\.rawValue).joined(separator: "|")) FILE...")
            exit(2)
        }
        for path in arguments.dropFirst() {
            guard let data = FileManager.default.contents(atPath: path) else {
                print("cannot read \(path)")
                exit(1)
            }
            target.run(data)
        }
        print("replayed \(arguments.count - 1) input(s) through \(name): no crash")
    }
}
#endif
