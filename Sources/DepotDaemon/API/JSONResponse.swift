import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

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
