import Foundation

/// Cuts a command into the packets its length protocol asks for, before the engine writes them.
package enum CommandChunker {
    /// A length of zero or less, or one past `maximum` while more than `maximum` bytes remain,
    /// is an error: a protocol that never advances would otherwise loop forever.
    package static func chunks(of data: Data, lengths: PeripheralCommandLengthProtocol,
                               maximum: Int) -> Result<[Data], PeripheralCommandError> {
        var chunks: [Data] = []
        var rest = data[...]
        while !rest.isEmpty {
            let length = lengths.currentLength()
            guard length > 0 else { return .failure(.invalidChunkLength(length)) }
            if length > maximum, rest.count > maximum { return .failure(.chunkTooLong(length: length, maximum: maximum)) }
            // The common command fits in one packet: it goes as it is, without slicing or a copy.
            if chunks.isEmpty, length >= rest.count { return .success([data]) }
            chunks.append(Data(rest.prefix(length)))
            rest = rest.dropFirst(length)
        }
        return .success(chunks)
    }
}
