/// The tables scripts/generate-assigned-numbers writes into Generated/, as tab-separated text:
/// one string literal compiles in a moment where a dictionary literal of 3,400 entries takes
/// the type checker minutes.
enum GeneratedTables {
    /// Parses `key<TAB>name` lines into a dictionary keyed by the lowercase key.
    static func parse(_ text: String) -> [String: String] {
        var result: [String: String] = [:]
        for line in text.split(separator: "\n") {
            guard let tab = line.firstIndex(of: "\t") else { continue }
            result[line[..<tab].lowercased()] = String(line[line.index(after: tab)...])
        }
        return result
    }
}
