import Foundation
import Hummingbird
import Logging
import Testing
import Yams

@testable import DepotDaemon

@Suite("docs/openapi.yaml")
struct OpenAPITests {
    static func document() throws -> [String: Any] {
        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../docs/openapi.yaml").standardized
        let text = try String(contentsOf: file, encoding: .utf8)
        guard let document = try Yams.load(yaml: text) as? [String: Any] else {
            throw DaemonProcess.DaemonError(message: "docs/openapi.yaml is not a YAML mapping")
        }
        return document
    }

    /// "METHOD /path/{param}" for every operation the document lists.
    static func documented() throws -> Set<String> {
        let paths = try document()["paths"] as? [String: Any] ?? [:]
        var operations = Set<String>()
        for (path, item) in paths {
            for method in (item as? [String: Any] ?? [:]).keys
            where ["get", "post", "put", "delete", "patch"].contains(method) {
                operations.insert("\(method.uppercased()) \(path)")
            }
        }
        return operations
    }

    @Test("is valid YAML, an OpenAPI 3.1 document whose every $ref resolves")
    func parses() throws {
        let document = try Self.document()
        #expect((document["openapi"] as? String)?.hasPrefix("3.1") == true)
        var refs: [String] = []
        func walk(_ node: Any) {
            if let map = node as? [String: Any] {
                if let ref = map["$ref"] as? String { refs.append(ref) }
                map.values.forEach(walk)
            } else if let list = node as? [Any] {
                list.forEach(walk)
            }
        }
        walk(document)
        #expect(refs.count > 20)
        for ref in Set(refs) {
            #expect(ref.hasPrefix("#/"), "\(ref)")
            var node: Any? = document
            for part in ref.dropFirst(2).split(separator: "/") { node = (node as? [String: Any])?[String(part)] }
            #expect(node != nil, "\(ref) points at nothing")
        }
    }

    @Test("documents exactly the routes the daemon serves")
    func matchesRouter() throws {
        let config = try DaemonConfig.parse(DaemonProcess.config(), file: "/tmp/depot.toml")
        let routes = ControlRoutes(
            settings: LiveSettings(config),
            jobs: JobManager(stateDir: "/tmp", logger: Logger(label: "test"), metrics: Metrics()),
            metrics: Metrics(), logger: Logger(label: "test"))
        let served = Set(
            routes.router().routes.map { route in
                let path = route.path.description.split(separator: "/").map { part in
                    part.hasPrefix(":") ? "{\(part.dropFirst())}" : String(part)
                }
                return "\(route.method) /" + path.joined(separator: "/")
            })
        let documented = try Self.documented()
        #expect(served.count >= 17)  // the parse found the routes at all
        #expect(served.subtracting(documented) == [], "served but not documented")
        #expect(documented.subtracting(served) == [], "documented but not served")
    }
}
