/// Counts the app's calls running inline on the loop (a facade method called from inside a
/// callback runs at once instead of hopping): while one runs, callbacks wait for it to return.
package enum InlineCall {
    @BleLoop package static var depth = 0

    /// Runs `body` as an inline call.
    @BleLoop package static func run(_ body: @BleLoop () -> Void) {
        depth += 1
        defer { depth -= 1 }
        body()
    }

    /// Runs `function(argument)` as an inline call: a named function, not a closure, on the
    /// hot paths (see `BleLoop.assumeIsolated(_:with:)`).
    @BleLoop package static func run<Argument>(_ function: @BleLoop (Argument) -> Void, with argument: Argument) {
        depth += 1
        defer { depth -= 1 }
        function(argument)
    }
}
