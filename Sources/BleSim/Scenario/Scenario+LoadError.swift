import Foundation

extension Scenario {
    /// Why a scenario file was refused.
    ///
    /// `description` reads `Scenario FILE is invalid: line N, PATH: what is wrong; what to write`,
    /// the message `blekit sim` prints before it exits with a failure.
    public enum LoadError: Error, Equatable, CustomStringConvertible {
        /// The file could not be read.
        case unreadable(file: String, detail: String)
        /// The text is not JSON; `line` is where the parser stopped, when it says.
        case notJSON(file: String, line: Int?, detail: String)
        /// The JSON does not describe a scenario: `problem` says what and where, `line` is the
        /// line of `problem.path` in the file.
        case invalid(file: String, line: Int?, problem: ScenarioProblem)

        /// Where and what.
        public var description: String {
            switch self {
            case .unreadable(let file, let detail):
                return "Cannot read scenario \(file): \(detail)"
            case .notJSON(let file, let line, let detail):
                return "Scenario \(file) is invalid: \(line.map { "line \($0): " } ?? "")not valid JSON: \(detail)"
            case .invalid(let file, let line, let problem):
                return "Scenario \(file) is invalid: \(line.map { "line \($0), " } ?? "")\(problem)"
            }
        }

        /// The error `JSONDecoder` threw for `data` as a load error: a `ScenarioProblem` from
        /// the scenario types as it is, a `DecodingError` turned into the problem it stands for.
        init(_ error: Error, file: String, data: Data) {
            let problem: ScenarioProblem
            switch error {
            case let thrown as ScenarioProblem:
                problem = thrown
            case DecodingError.typeMismatch(let type, let context):
                let path = ScenarioPath(context.codingPath)
                problem = .wrongType(path: path, expected: Self.expectation(type), found: Self.found(at: path, in: data))
            case DecodingError.valueNotFound(let type, let context):
                problem = .wrongType(path: ScenarioPath(context.codingPath), expected: Self.expectation(type), found: "null")
            case DecodingError.keyNotFound(let key, let context):
                problem = .missingKey(path: ScenarioPath(context.codingPath), key: key.stringValue)
            case DecodingError.dataCorrupted(let context):
                if context.codingPath.isEmpty, let (line, detail) = Self.syntaxError(in: data) {
                    self = .notJSON(file: file, line: line, detail: detail)
                    return
                }
                problem = .invalidValue(path: ScenarioPath(context.codingPath), value: "", reason: context.debugDescription)
            default:
                problem = .invalidValue(path: ScenarioPath(), value: "", reason: "\(error)")
            }
            let line = problem.path.components.isEmpty ? nil : JSONLocator.line(of: problem.path.codingKeys, in: data)
            self = .invalid(file: file, line: line, problem: problem)
        }

        /// What a decoder wanted, in JSON's words.
        private static func expectation(_ type: Any.Type) -> String {
            let name = String(describing: type)
            if name.hasPrefix("Dictionary") { return "an object" }
            if name.hasPrefix("Array") { return "a list" }
            if type == String.self { return "a string" }
            if type == Bool.self { return "true or false" }
            return "a number"
        }

        /// What the file holds at `path`, in JSON's words (`the string "loud"`).
        private static func found(at path: ScenarioPath, in data: Data) -> String {
            guard var value = try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed]) else { return "something else" }
            for component in path.components {
                switch component {
                case .key(let key):
                    guard let object = value as? [String: Any], let next = object[key] else { return "something else" }
                    value = next
                case .index(let index):
                    guard let list = value as? [Any], list.indices.contains(index) else { return "something else" }
                    value = list[index]
                }
            }
            switch value {
            case is NSNull: return "null"
            case let text as String: return "the string \"\(text.count > 40 ? String(text.prefix(40)) + "…" : text)\""
            case is [String: Any]: return "an object"
            case is [Any]: return "a list"
            case let number as NSNumber:
                // Linux's JSONSerialization gives true and false as NSNumber's Boolean subclass.
                if String(describing: type(of: number)).lowercased().contains("bool") { return number.boolValue ? "true" : "false" }
                return "the number \(number)"
            default: return "something else"
            }
        }

        /// JSONDecoder says only "not valid JSON"; JSONSerialization names the character offset
        /// (turned here into a line) or, for a number too large for a Double, the number (found
        /// in the text for its line).
        private static func syntaxError(in data: Data) -> (Int?, String)? {
            do {
                _ = try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
                return nil
            } catch {
                let detail = ((error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String) ?? "\(error)"
                func line(atOffset offset: Int) -> Int { data.prefix(offset).reduce(1) { $1 == UInt8(ascii: "\n") ? $0 + 1 : $0 } }
                if let range = detail.range(of: "character "), let offset = Int(detail[range.upperBound...].prefix { $0.isNumber }) {
                    return (line(atOffset: offset), detail)
                }
                if let range = detail.range(of: "Number "), let number = detail[range.upperBound...].split(separator: " ").first,
                   let found = data.firstRange(of: Data(number.utf8)) {
                    return (line(atOffset: found.lowerBound - data.startIndex), detail + " Numbers must fit a Double (at most about 1.8e308).")
                }
                return (nil, detail)
            }
        }
    }
}
