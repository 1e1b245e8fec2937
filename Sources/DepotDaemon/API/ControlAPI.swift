package import DepotEngine
import Foundation
package import HTTPTypes
package import Hummingbird
package import Logging
package import NIOCore

/// Each request's context: Hummingbird's core storage plus the connection,
/// whose peer credentials decide what the client may do.
package struct DepotRequestContext: RequestContext {
    package var coreContext: CoreRequestContextStorage
    let channel: any Channel
    var peer: Peer?

    package init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
    }

    /// Hummingbird's own body limit; uploads stream past it to the spool file.
    package var maxUploadSize: Int { 1 << 20 }
}

/// Turns every error into the API's JSON error body, reads the peer's
/// credentials, and counts requests.
struct APIMiddleware: RouterMiddleware {
    typealias Context = DepotRequestContext
    let metrics: Metrics
    let logger: Logger

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = ContinuousClock.now
        var context = context
        let response: Response
        do {
            context.peer = try await PeerCredentials.read(context.channel)
            response = try await next(request, context)
        } catch {
            let api = APIError.answer(to: error)
            if api.code == .internal {
                // The one log line of an unexpected error; the client sees
                // the code and a fixed message, never the error's text.
                logger.error("a request failed", metadata: [
                    "METHOD": "\(request.method)", "PATH": "\(request.uri.path)", "ERROR": "\(error)"])
            }
            var errorResponse = JSONResponse.make(api.body, status: api.status)
            // The rest of a refused body (too large, no room on the disk, a
            // failure while spooling) is not read: close the connection
            // rather than leave the client waiting for the idle timeout.
            if [413, 500, 507].contains(api.status.code) { errorResponse.headers[.connection] = "close" }
            response = errorResponse
        }
        let elapsed = ContinuousClock.now - start
        metrics.request(status: Int(response.status.code),
                        seconds: Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
        return response
    }
}

enum JSONResponse {
    static func make(_ json: String, status: HTTPResponse.Status = .ok) -> Response {
        var buffer = ByteBuffer()
        buffer.writeString(json)
        buffer.writeString("\n")
        return Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: buffer))
    }

    static func encode<T: Encodable>(_ value: T, status: HTTPResponse.Status = .ok) throws -> Response {
        make(String(decoding: try encoder.encode(value), as: UTF8.self), status: status)
    }

    static let encoder: JSONEncoder = {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return e
    }()

    /// An NDJSON stream, one line per element, flushed as each is written.
    static func stream(_ lines: @escaping @Sendable (_ write: (String) async throws -> Void) async throws -> Void) -> Response {
        Response(status: .ok, headers: [.contentType: "application/x-ndjson", .cacheControl: "no-cache"],
                 body: ResponseBody { writer in
                     try await lines { line in
                         var buffer = ByteBuffer()
                         buffer.writeString(line)
                         buffer.writeString("\n")
                         try await writer.write(buffer)
                     }
                     try await writer.finish(nil)
                 })
    }
}

/// Reads a JSON request body into a `Decodable`, with clear errors.
enum JSONBody {
    static func decode<T: Decodable>(_ type: T.Type, from request: Request, limit: Int) async throws -> T {
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
        if bytes.isEmpty { bytes = Data("{}".utf8) }
        do {
            return try JSONDecoder().decode(T.self, from: bytes)
        } catch let error as DecodingError {
            throw APIError(.invalidArgument, describe(error))
        }
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
