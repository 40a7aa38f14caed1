import Foundation

/// A difference between the real bluetoothd and BleSim that is understood: it names the item
/// of BleSim's README that explains it.
public struct KnownDifference: Codable, Sendable {
    /// The scenario it occurs in.
    public var scenario: String
    /// `steps` or `states`.
    public var list: String
    /// The entry as bluetoothd's run has it (nil: BleSim has an entry bluetoothd lacks). An
    /// entry starting with `re:` is a regular expression the whole entry must match, for what
    /// varies between runs of the real daemon.
    public var bluetoothd: String?
    /// The entry as BleSim's run has it (nil: bluetoothd has an entry BleSim lacks).
    public var bleSim: String?
    /// The number of the item in "Known differences" of `Sources/BleSim/README.md`.
    public var readmeItem: Int

    /// A difference explained by README item `readmeItem`.
    public init(scenario: String, list: String, bluetoothd: String?, bleSim: String?, readmeItem: Int) {
        self.scenario = scenario
        self.list = list
        self.bluetoothd = bluetoothd
        self.bleSim = bleSim
        self.readmeItem = readmeItem
    }

    /// True when this explains bluetoothd's `real` against BleSim's `simulated`.
    public func explains(bluetoothd real: String?, bleSim simulated: String?) -> Bool {
        guard bleSim == simulated else { return false }
        guard let expected = bluetoothd, let real else { return bluetoothd == nil && real == nil }
        guard expected.hasPrefix("re:") else { return expected == real }
        let pattern = "^(?:" + expected.dropFirst(3) + ")$"
        return real.range(of: pattern, options: .regularExpression) != nil
    }

    /// Loads the list kept next to the parity report.
    public static func load(from file: URL) throws -> [KnownDifference] {
        try JSONDecoder().decode([KnownDifference].self, from: Data(contentsOf: file))
    }
}

/// Compares the transcripts of the same scenarios on bluetoothd and on BleSim, entry by entry
/// in order, and explains each difference with a `KnownDifference` or reports it as
/// unexplained.
public struct ParityComparison: Sendable {
    /// How one aligned pair of entries compares.
    public enum Verdict: Sendable, Equatable {
        /// Both sides have the entry.
        case same
        /// They differ, as item N of BleSim's README explains.
        case known(readmeItem: Int)
        /// They differ and nothing explains it.
        case unexplained
    }

    /// One aligned pair: an entry of `steps` or `states` on each side (nil: that side lacks it).
    public struct Row: Sendable {
        /// `steps` or `states`.
        public var list: String
        /// bluetoothd's entry.
        public var bluetoothd: String?
        /// BleSim's entry.
        public var bleSim: String?
        /// How they compare.
        public var verdict: Verdict
    }

    /// One scenario's outcome.
    public struct ScenarioResult: Sendable {
        /// The scenario.
        public var scenario: String
        /// Whether it passed on each backend (nil: not run there).
        public var passedOnBluetoothd: Bool?
        /// Whether it passed on BleSim.
        public var passedOnBleSim: Bool?
        /// Both runs side by side, entry by entry, each row with its verdict.
        public var rows: [Row] = []

        /// Differences with their explanation (README item), in order.
        public var explained: [(list: String, bluetoothd: String?, bleSim: String?, readmeItem: Int)] {
            rows.compactMap { row in
                if case .known(let item) = row.verdict { return (row.list, row.bluetoothd, row.bleSim, item) }
                return nil
            }
        }
        /// Differences nobody explained.
        public var unexplained: [(list: String, bluetoothd: String?, bleSim: String?)] {
            rows.compactMap { row in row.verdict == .unexplained ? (row.list, row.bluetoothd, row.bleSim) : nil }
        }
        /// The number of entries both agree on.
        public var agreeing: Int { rows.filter { $0.verdict == .same }.count }
        /// Wall time on bluetoothd and on BleSim, in seconds.
        public var seconds: (bluetoothd: Double?, bleSim: Double?) = (nil, nil)
    }

    /// Every scenario compared, in name order.
    public private(set) var results: [ScenarioResult] = []

    /// Compares `bluetoothd` with `bleSim` using `known`.
    public init(bluetoothd: [String: Transcript], bleSim: [String: Transcript], known: [KnownDifference]) {
        for name in Set(bluetoothd.keys).union(bleSim.keys).sorted() {
            let real = bluetoothd[name]
            let simulated = bleSim[name]
            var result = ScenarioResult(scenario: name, passedOnBluetoothd: real?.passed, passedOnBleSim: simulated?.passed)
            result.seconds = (real?.seconds, simulated?.seconds)
            if let real, let simulated {
                for (list, left, right) in [("steps", real.steps, simulated.steps), ("states", real.states, simulated.states)] {
                    let known = known.filter { $0.scenario == name && $0.list == list }
                    for alignment in Self.align(left, right) {
                        switch alignment {
                        case .same(let entry):
                            result.rows.append(Row(list: list, bluetoothd: entry, bleSim: entry, verdict: .same))
                        case .differ(let l, let r):
                            let match = known.first { $0.explains(bluetoothd: l, bleSim: r) }
                            result.rows.append(Row(list: list, bluetoothd: l, bleSim: r,
                                                   verdict: match.map { .known(readmeItem: $0.readmeItem) } ?? .unexplained))
                        }
                    }
                }
            }
            results.append(result)
        }
    }

    /// Differences nobody explained, and scenarios that failed or ran on one side only.
    public var problems: [String] {
        results.flatMap { result -> [String] in
            var problems = result.unexplained.map { "\(result.scenario) \($0.list): bluetoothd \($0.bluetoothd ?? "—") ≠ BleSim \($0.bleSim ?? "—")" }
            if result.passedOnBluetoothd != true { problems.append("\(result.scenario): did not pass on bluetoothd") }
            if result.passedOnBleSim != true { problems.append("\(result.scenario): did not pass on BleSim") }
            return problems
        }
    }

    enum Alignment: Equatable {
        case same(String)
        case differ(String?, String?)
    }

    /// A longest-common-subsequence alignment, so that one extra entry shows as one
    /// difference rather than shifting everything after it.
    static func align(_ left: [String], _ right: [String]) -> [Alignment] {
        let n = left.count, m = right.count
        var table = Array(repeating: Array(repeating: 0, count: m + 1), count: n + 1)
        for i in stride(from: n - 1, through: 0, by: -1) {
            for j in stride(from: m - 1, through: 0, by: -1) {
                table[i][j] = left[i] == right[j] ? table[i + 1][j + 1] + 1 : max(table[i + 1][j], table[i][j + 1])
            }
        }
        // Walk the table: entries in the common part are the same; between two of them, what
        // only one side has is paired up with what only the other side has, side by side.
        var result: [Alignment] = []
        var onlyLeft: [String] = [], onlyRight: [String] = []
        func flush() {
            for index in 0..<max(onlyLeft.count, onlyRight.count) {
                result.append(.differ(index < onlyLeft.count ? onlyLeft[index] : nil, index < onlyRight.count ? onlyRight[index] : nil))
            }
            onlyLeft.removeAll()
            onlyRight.removeAll()
        }
        var i = 0, j = 0
        while i < n || j < m {
            if i < n, j < m, left[i] == right[j] {
                flush()
                result.append(.same(left[i])); i += 1; j += 1
            } else if j >= m || (i < n && table[i + 1][j] >= table[i][j + 1]) {
                onlyLeft.append(left[i]); i += 1
            } else {
                onlyRight.append(right[j]); j += 1
            }
        }
        flush()
        return result
    }

    /// The report as Markdown: a summary table, then each scenario's differences.
    public func markdown(title: String, context: String) -> String {
        var lines = ["# \(title)", "", context, "",
                     "| scenario | bluetoothd | BleSim | entries agreeing | known differences | unexplained |",
                     "|---|---|---|---|---|---|"]
        func mark(_ passed: Bool?, _ seconds: Double?) -> String {
            let verdict = passed.map { $0 ? "pass" : "FAIL" } ?? "not run"
            return seconds.map { String(format: "%@ (%.1f s)", verdict, $0) } ?? verdict
        }
        for result in results {
            lines.append("| `\(result.scenario)` | \(mark(result.passedOnBluetoothd, result.seconds.bluetoothd)) | \(mark(result.passedOnBleSim, result.seconds.bleSim)) | \(result.agreeing) | \(result.explained.count) | \(result.unexplained.count) |")
        }
        let realTotal = results.compactMap(\.seconds.bluetoothd).reduce(0, +)
        let simulatedTotal = results.compactMap(\.seconds.bleSim).reduce(0, +)
        lines += ["", String(format: "%d scenarios; %.0f s of scenarios on bluetoothd (software-emulated guest), %.1f s on BleSim.",
                             results.count, realTotal, simulatedTotal)]
        lines += ["", "# Differences"]
        for result in results where !result.explained.isEmpty || !result.unexplained.isEmpty {
            lines += ["", "## `\(result.scenario)`", ""]
            for item in result.explained {
                lines.append("- \(item.list), known difference \(item.readmeItem) of BleSim's README: bluetoothd `\(item.bluetoothd ?? "—")` / BleSim `\(item.bleSim ?? "—")`")
            }
            for item in result.unexplained {
                lines.append("- **unexplained** (\(item.list)): bluetoothd `\(item.bluetoothd ?? "—")` / BleSim `\(item.bleSim ?? "—")`")
            }
        }
        lines += ["", "# Both runs, side by side", "",
                  "Each scenario's steps, then its states; a row with one side empty is an entry only that side has."]
        func cell(_ text: String?) -> String {
            guard let text else { return "—" }
            let escaped = text.replacingOccurrences(of: "|", with: "\\|")
            return escaped.count > 160 ? "`\(escaped.prefix(157))…`" : "`\(escaped)`"
        }
        for result in results {
            lines += ["", "<details><summary><code>\(result.scenario)</code></summary>", "",
                      "| | bluetoothd 5.66 | BleSim | |", "|---|---|---|---|"]
            for row in result.rows {
                let verdict: String
                switch row.verdict {
                case .same: verdict = "="
                case .known(let item): verdict = "README \(item)"
                case .unexplained: verdict = "**unexplained**"
                }
                lines.append("| \(row.list) | \(cell(row.bluetoothd)) | \(cell(row.bleSim)) | \(verdict) |")
            }
            lines += ["", "</details>"]
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
