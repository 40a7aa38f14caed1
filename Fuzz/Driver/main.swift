import BleFuzzTargets
import Foundation

// Built twice. With -DBLEKIT_FUZZING (make fuzz) libFuzzer supplies main and calls the entry
// point below; BLEKIT_FUZZ_TARGET names the target. Without it this is a replayer:
// `blekit-fuzz TARGET FILE...` runs each file once and exits non-zero on a bad target name.
#if BLEKIT_FUZZING
nonisolated(unsafe) let selected: FuzzTarget = {
    let name = ProcessInfo.processInfo.environment["BLEKIT_FUZZ_TARGET"] ?? ""
    guard let target = FuzzTarget(rawValue: name) else {
        FileHandle.standardError.write(Data("BLEKIT_FUZZ_TARGET must be one of \(FuzzTarget.allCases.map(\.rawValue))\n".utf8))
        exit(2)
    }
    return target
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    guard let start else { return 0 }
    selected.run(Data(bytes: start, count: count))
    return 0
}
#else
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
#endif
