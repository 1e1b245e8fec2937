import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// A failure depotctl reports on one line of stderr (exit status 1).
struct Failure: Error, CustomStringConvertible {
    var message: String
    /// For a predicate error: the predicate and the 1-based position to mark.
    var caret: (text: String, position: Int)?
    /// The daemon's error code, when the daemon answered with one.
    var code: String?

    init(_ message: String, code: String? = nil) {
        self.message = message
        self.code = code
    }

    var description: String { message }
}

/// What a request sends: nothing, bytes, or a file streamed from disk.
enum RequestBody {
    case none
    case bytes([UInt8], contentType: String)
    case file(path: String, contentType: String)
}

/// HTTP/1.1 to depotd over its Unix socket, one connection per request,
/// through SwiftNIO's HTTP client codec.
struct DaemonClient: Sendable {
    let socketPath: String

    /// One request; the whole answer's body. A status of 300 or more throws
    /// the daemon's error.
    func call(_ method: HTTPMethod, _ uri: String, body: RequestBody = .none) async throws -> [UInt8] {
        var bytes: [UInt8] = []
        try await exchange(method, uri, body: body) { chunk in
            bytes += chunk
            return true
        }
        return bytes
    }

    /// A JSON request; the answer decoded.
    func json<T: Decodable>(_ type: T.Type, _ method: HTTPMethod, _ uri: String, body: [String: JSONValue]? = nil) async throws -> T {
        let bytes = try await call(method, uri, body: body.map { .bytes(Array(JSONValue.object($0).text.utf8), contentType: "application/json") } ?? .none)
        do {
            return try JSONDecoder().decode(T.self, from: Data(bytes))
        } catch {
            throw Failure("the daemon's answer to \(method) \(uri) was not what depotctl expected: \(error)")
        }
    }

    /// A streamed answer, line by line (NDJSON), until `onLine` returns false
    /// or the daemon ends the stream.
    func lines(_ method: HTTPMethod, _ uri: String, body: RequestBody = .none,
               onLine: (String) async throws -> Bool) async throws {
        var pending: [UInt8] = []
        try await exchange(method, uri, body: body) { chunk in
            pending += chunk
            while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: pending[..<newline], as: UTF8.self)
                pending.removeSubrange(...newline)
                if !line.isEmpty, try await !onLine(line) { return false }
            }
            return true
        }
    }

    /// A streamed answer as it comes, chunk by chunk, until `onBody`
    /// returns false or the answer ends.
    func exchange(_ method: HTTPMethod, _ uri: String, body: RequestBody = .none,
                  onBody: ([UInt8]) async throws -> Bool) async throws {
        let channel: NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>
        do {
            channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connect(unixDomainSocketPath: socketPath) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHTTPClientHandlers()
                        return try NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>(wrappingChannelSynchronously: channel)
                    }
                }
        } catch {
            throw Self.unreachable(socketPath, error)
        }
        try await channel.executeThenClose { inbound, outbound in
            var head = HTTPRequestHead(version: .http1_1, method: method, uri: uri)
            head.headers.add(name: "Host", value: "depot")
            head.headers.add(name: "User-Agent", value: "depotctl")
            head.headers.add(name: "Connection", value: "close")
            // The daemon may answer and close the connection as soon as it has
            // read the head (a job that ended already, a refusal): a write
            // after that fails with "I/O on closed channel" although the
            // answer is there to read. So a failed write only counts when no
            // complete answer follows.
            var unsent: (any Error)?
            do {
                switch body {
                case .none:
                    head.headers.add(name: "Content-Length", value: "0")
                    try await outbound.write(contentsOf: [.head(head), .end(nil)])
                case .bytes(let bytes, let type):
                    head.headers.add(name: "Content-Type", value: type)
                    head.headers.add(name: "Content-Length", value: "\(bytes.count)")
                    try await outbound.write(contentsOf: [.head(head), .body(.byteBuffer(ByteBuffer(bytes: bytes))), .end(nil)])
                case .file(let path, let type):
                    guard let handle = FileHandle(forReadingAtPath: path) else {
                        throw Failure("cannot read \(path): \(String(cString: strerror(errno)))")
                    }
                    defer { try? handle.close() }
                    let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
                    head.headers.add(name: "Content-Type", value: type)
                    head.headers.add(name: "Content-Length", value: "\(size)")
                    try await outbound.write(.head(head))
                    while let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty {
                        try await outbound.write(.body(.byteBuffer(ByteBuffer(bytes: chunk))))
                    }
                    try await outbound.write(.end(nil))
                }
            } catch let failure as Failure {
                throw failure
            } catch {
                unsent = error
            }
            var status = 0
            var errorBody: [UInt8] = []
            do {
                for try await part in inbound {
                    switch part {
                    case .head(let h):
                        status = Int(h.status.code)
                    case .body(let buffer):
                        if status >= 300 {
                            errorBody += buffer.readableBytesView
                        } else if try await !onBody(Array(buffer.readableBytesView)) {
                            return
                        }
                    case .end:
                        if status >= 300 { throw Self.failure(status: status, body: errorBody) }
                        return
                    }
                }
            } catch let failure as Failure {
                throw failure
            } catch where unsent != nil {
                // Reading failed too: the write's error says more.
            }
            if status >= 300 { throw Self.failure(status: status, body: errorBody) }
            if status == 0 {
                if let unsent { throw Failure("the daemon closed the connection before depotctl could send its request: \(unsent)") }
                throw Failure("the daemon closed the connection without answering")
            }
        }
    }

    /// The daemon's `{"error": {"code", "message", "position"}}`.
    static func failure(status: Int, body: [UInt8]) -> Failure {
        struct Envelope: Decodable {
            struct Inner: Decodable { var code: String; var message: String; var position: Int? }
            var error: Inner
        }
        guard let envelope = try? JSONDecoder().decode(Envelope.self, from: Data(body)) else {
            return Failure("the daemon answered \(status) without saying why")
        }
        var failure = Failure(envelope.error.message, code: envelope.error.code)
        if let position = envelope.error.position { failure.caret = ("", position) }
        return failure
    }

    static func unreachable(_ path: String, _ error: any Error) -> Failure {
        let code = (error as? IOError)?.errnoCode ?? 0
        let hint = "start it (systemctl start depotd) or point depotctl at its socket with --socket or DEPOT_SOCKET"
        switch code {
        case ENOENT:
            return Failure("no daemon at \(path): the socket does not exist; \(hint)")
        case ECONNREFUSED:
            return Failure("no daemon answers at \(path) (connection refused); \(hint)")
        case EACCES, EPERM:
            return Failure("cannot connect to \(path): permission denied; your user needs the socket's group "
                + "(ls -l \(path)) or a principal in the daemon's [access]")
        default:
            return Failure("cannot connect to \(path): \(error); \(hint)")
        }
    }
}

/// A JSON value that keeps its type (a `true` is not a `1`), for records and
/// arguments of any shape.
enum JSONValue: Codable, Equatable, Sendable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() { self = .null }
        else if let b = try? c.decode(Bool.self) { self = .bool(b) }
        else if let i = try? c.decode(Int64.self) { self = .int(i) }
        else if let d = try? c.decode(Double.self) { self = .double(d) }
        else if let s = try? c.decode(String.self) { self = .string(s) }
        else if let a = try? c.decode([JSONValue].self) { self = .array(a) }
        else { self = .object(try c.decode([String: JSONValue].self)) }
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .null: try c.encodeNil()
        case .bool(let b): try c.encode(b)
        case .int(let i): try c.encode(i)
        case .double(let d): try c.encode(d)
        case .string(let s): try c.encode(s)
        case .array(let a): try c.encode(a)
        case .object(let o): try c.encode(o)
        }
    }

    subscript(key: String) -> JSONValue? {
        if case .object(let o) = self { return o[key] }
        return nil
    }

    var string: String? { if case .string(let s) = self { s } else { nil } }
    var int: Int? { if case .int(let i) = self { Int(i) } else { nil } }
    var array: [JSONValue]? { if case .array(let a) = self { a } else { nil } }

    /// Compact JSON text; object keys in `order` first, the rest sorted.
    func text(order: [String] = []) -> String {
        switch self {
        case .null: return "null"
        case .bool(let b): return b ? "true" : "false"
        case .int(let i): return String(i)
        case .double(let d): return d.isFinite ? (d == d.rounded() && abs(d) < 1e15 ? String(format: "%.1f", d) : "\(d)") : "null"
        case .string(let s): return Self.quoted(s)
        case .array(let a): return "[" + a.map { $0.text() }.joined(separator: ",") + "]"
        case .object(let o):
            let keys = order.filter { o[$0] != nil } + o.keys.filter { !order.contains($0) }.sorted()
            return "{" + keys.map { Self.quoted($0) + ":" + o[$0]!.text() }.joined(separator: ",") + "}"
        }
    }

    var text: String { text() }

    /// How a table cell shows the value.
    var display: String {
        switch self {
        case .null: return ""
        case .string(let s): return s
        case .int(let i): return Format.grouped(Int(i))
        case .double(let d): return Format.decimal(d)
        default: return text
        }
    }

    static func quoted(_ s: String) -> String {
        var out = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20: out += String(format: "\\u%04x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
