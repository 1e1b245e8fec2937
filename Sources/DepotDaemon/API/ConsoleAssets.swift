import CDepotConsole
import DepotWire
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// The console's files (DESIGN §19), as depotd serves them at `/console/`:
/// embedded in the binary at build time (Sources/CDepotConsole), each
/// gzip-compressed once, the first time the console is asked for.
///
/// Every file but `index.html` is also served under a name carrying a hash
/// of its bytes (`app.3f09c2a1b7d4.js`), which `index.html` names, so that
/// a browser keeps it for good (`immutable`) and a new depotd's files are
/// fetched anew; `index.html` itself is revalidated (`no-cache`, `ETag`).
struct ConsoleAssets: Sendable {
    struct Asset: Sendable {
        var type: String
        var bytes: ByteBuffer
        var gzip: ByteBuffer?
        var etag: String
        /// Kept for good by the browser: its name carries its hash.
        var immutable: Bool
    }

    /// By name under `/console/`: `index.html`, each file by its own name
    /// and by its hashed one.
    let files: [String: Asset]

    static let shared = ConsoleAssets()

    init() {
        var files: [String: Asset] = [:]
        var hashed: [(plain: String, hashed: String)] = []
        var index: (type: String, bytes: [UInt8])?
        for i in 0..<depot_console_asset_count() {
            let a = depot_console_asset_at(i).pointee
            let name = String(cString: a.name)
            let type = String(cString: a.type)
            let bytes = Array(UnsafeBufferPointer(start: a.data, count: Int(a.size)))
            if name == "index.html" {
                index = (type, bytes)
                continue
            }
            let hash = Self.hash(bytes)
            let dot = name.lastIndex(of: ".") ?? name.endIndex
            let hashedName = name[..<dot] + "." + hash.prefix(12) + name[dot...]
            hashed.append((name, String(hashedName)))
            files[name] = Self.asset(type, bytes, immutable: false)
            files[String(hashedName)] = Self.asset(type, bytes, immutable: true)
        }
        if let index {
            // index.html names each file by its hashed name.
            var text = String(decoding: index.bytes, as: UTF8.self)
            for (plain, hashedName) in hashed {
                text = text.replacingOccurrences(of: "\"\(plain)\"", with: "\"\(hashedName)\"")
            }
            files["index.html"] = Self.asset(index.type, Array(text.utf8), immutable: false)
        }
        self.files = files
    }

    static func asset(_ type: String, _ bytes: [UInt8], immutable: Bool) -> Asset {
        var compressed: ByteBuffer?
        bytes.withUnsafeBufferPointer { raw in
            var out: UnsafeMutablePointer<UInt8>?
            let size = Int(depot_console_gzip(raw.baseAddress, UInt(raw.count), &out))
            if size > 0, let out {
                compressed = ByteBuffer(bytes: UnsafeBufferPointer(start: out, count: size))
                free(out)
            }
        }
        return Asset(
            type: type, bytes: ByteBuffer(bytes: bytes), gzip: compressed, etag: "\"\(hash(bytes))\"",
            immutable: immutable)
    }

    /// FNV-1a, 64 bits, as hex: a name for a version of a file, not a
    /// protection against anyone.
    static func hash(_ bytes: [UInt8]) -> String {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in bytes {
            h ^= UInt64(b)
            h = h &* 0x100_0000_01b3
        }
        let hex = String(h, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// The answer to `GET /console/NAME`.
    func response(_ name: String, _ request: Request) throws -> Response {
        guard let asset = files[name] else {
            throw APIError(.notFound, "the console has no file \(name)")
        }
        var headers: HTTPFields = [
            .contentType: asset.type, .eTag: asset.etag, .vary: "Accept-Encoding",
            .cacheControl: asset.immutable ? "public, max-age=31536000, immutable" : "no-cache",
            .xContentTypeOptions: "nosniff", HTTPField.Name("Referrer-Policy")!: "no-referrer",
            .contentSecurityPolicy:
                "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
        ]
        if request.headers[.ifNoneMatch]?.split(separator: ",").contains(where: {
            $0.trimmingCharacters(in: .whitespaces) == asset.etag
        }) == true {
            return Response(status: .notModified, headers: headers)
        }
        let gzip = request.headers[.acceptEncoding]?.lowercased().contains("gzip") == true ? asset.gzip : nil
        if gzip != nil { headers[.contentEncoding] = "gzip" }
        let body = gzip ?? asset.bytes
        headers[.contentLength] = "\(body.readableBytes)"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: body))
    }
}
