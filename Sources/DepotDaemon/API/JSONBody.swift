import DepotEngine
import DepotWire
import Foundation
import Hummingbird

/// Reads a JSON request body into a `Decodable`, with clear errors.
enum JSONBody {
    static func decode<T: Decodable>(_ type: T.Type, from request: Request, limit: Int) async throws -> T {
        try decode(T.self, from: try await read(request, limit: limit))
    }

    /// A body's value: an empty body is `{}`. The bodies that carry many
    /// changes (``QuickJSONBody``) are read by ``JSONTree`` when it can,
    /// else (and to word an error) by `JSONDecoder`.
    static func decode<T: Decodable>(_ type: T.Type, from bytes: Data) throws -> T {
        let bytes = bytes.isEmpty ? Data("{}".utf8) : bytes
        if let quick = T.self as? any QuickJSONBody.Type, let tree = bytes.withUnsafeBytes(JSONTree.parse),
            let value = quick.init(json: tree)
        {
            return value as! T
        }
        do {
            return try JSONDecoder().decode(T.self, from: bytes)
        } catch let error as DecodingError {
            throw APIError(.invalidArgument, describe(error))
        }
    }

    /// The body's bytes, at most `limit` of them (else `413`).
    static func read(_ request: Request, limit: Int) async throws -> Data {
        // Read on past the limit (discarding, up to a bound) so that a client
        // that writes its whole body before reading gets its 413.
        var bytes = Data()
        var total = 0
        for try await chunk in request.body {
            total += chunk.readableBytes
            if total <= limit { bytes.append(contentsOf: chunk.readableBytesView) }
            if total > 64 << 20 { break }
        }
        if total > limit {
            throw APIError(.tooLarge, "the request body is larger than \(limit) bytes")
        }
        return bytes
    }

    static func describe(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context) -> String {
            let p = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
            return p.isEmpty ? "the body" : "\"\(p)\""
        }
        switch error {
        case .dataCorrupted(let c) where c.codingPath.isEmpty:
            return "the request body is not valid JSON"
        case .dataCorrupted(let c): return "\(path(c)) \(c.debugDescription)"
        case .keyNotFound(let key, let c):
            return "\(path(c) == "the body" ? "the body" : path(c)) lacks the key \"\(key.stringValue)\""
        case .typeMismatch(let type, let c): return "\(path(c)) must be \(describe(type))"
        case .valueNotFound(let type, let c): return "\(path(c)) must be \(describe(type)), not null"
        @unknown default: return "the request body does not fit: \(error)"
        }
    }

    static func describe(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Int.Type, is Int64.Type: "an integer"
        case is Double.Type: "a number"
        case is Bool.Type: "a boolean"
        case is [String].Type: "an array of strings"
        default: "of another type"
        }
    }
}
