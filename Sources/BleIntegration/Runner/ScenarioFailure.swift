/// A scenario's check did not hold.
public struct ScenarioFailure: Error, CustomStringConvertible {
    /// What was expected and what happened instead.
    public var message: String

    /// A failure with `message`.
    public init(_ message: String) {
        self.message = message
    }

    /// The message.
    public var description: String { message }
}
